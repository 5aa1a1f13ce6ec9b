# accuracy.rb: a CPU workload with a known split, for the Ruby profiling tests and the accuracy
# benchmark. Usage: ruby accuracy.rb SECONDS [TRUTH_FILE]
#   a_work   pure Ruby, 3 frames deep                          (target 30% of CPU)
#   b_work   pure Ruby, under 10 levels of recursion (deep)    (target 30%)
#   c_zlib   time spent inside Zlib::Deflate.deflate (native)   (target 40%)
# Each function measures its own thread CPU time; the real split is written to TRUTH_FILE as
# "name share" lines, with the line numbers of the hot loops ("line name N").
require "zlib"

class Accuracy
  DATA = (0...(1 << 18)).map { |i| ((i * 7919) % 251).chr }.join.b

  attr_reader :spent

  def initialize
    @spent = { "a_work" => 0.0, "b_work" => 0.0, "c_zlib" => 0.0 }
  end

  def now
    Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
  end

  def a_work(budget)
    t0 = now
    s = 0
    while now - t0 < budget
      i = 0
      while i < 2000
        s += i * i # LINE_A
        i += 1
      end
    end
    @spent["a_work"] += now - t0
    s
  end

  def b_work(budget)
    t0 = now
    s = 0
    while now - t0 < budget
      i = 0
      while i < 2000
        s ^= i << 3 # LINE_B
        i += 1
      end
    end
    @spent["b_work"] += now - t0
    s
  end

  def deep(n, budget)
    return deep(n - 1, budget) if n > 1
    b_work(budget)
  end

  def c_zlib(budget)
    t0 = now
    while now - t0 < budget
      Zlib::Deflate.deflate(DATA, 9) # LINE_C
    end
    @spent["c_zlib"] += now - t0
  end

  def phase_a
    a_work(0.03)
  end

  def run(seconds)
    finish = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) < finish
      phase_a
      deep(10, 0.03)
      c_zlib(0.04)
    end
  end
end

acc = Accuracy.new
acc.run(Float(ARGV[0] || 3))
if ARGV[1]
  total = acc.spent.values.sum
  File.open(ARGV[1], "w") do |f|
    acc.spent.each { |name, t| f.printf("%s %.4f\n", name, t / total) }
    File.readlines(__FILE__).each_with_index do |text, i|
      { "LINE_A" => "a_work", "LINE_B" => "b_work", "LINE_C" => "c_zlib" }.each do |tag, name|
        f.printf("line %s %d\n", name, i + 1) if text.rstrip.end_with?("# " + tag)
      end
    end
  end
end
