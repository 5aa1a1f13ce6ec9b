# stack.rb: a Ruby program with a known stack for the unit tests (tests/unit/test_ruby.c):
#   <main> -> Worker#outer -> Kernel#loop -> block in Worker#outer -> Worker#inner
#          -> Integer#times -> block in Worker#inner (spins)
# Prints "ready" once the stack is up.
class Worker
  def inner
    $stdout.puts "ready"
    $stdout.flush
    1_000_000_000.times do |i|
      i * i # SPIN
    end
  end

  def outer
    loop do
      inner # CALL_INNER
    end
  end
end

Worker.new.outer # CALL_OUTER
