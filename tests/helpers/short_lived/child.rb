# child.rb: a short-lived Ruby process: 15 ms of CPU in its top-level code, then 35 ms in a
# named method, then exit (parent.rb starts it many times).
def cpu_ms
  Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) * 1000
end

class ShortLived
  def work(until_ms)
    x = 0
    x += (1..200).sum { |i| i * i } while cpu_ms < until_ms
    x
  end
end

start = cpu_ms
y = 0
y += (1..200).sum while cpu_ms < start + 15
ShortLived.new.work(start + 50)
