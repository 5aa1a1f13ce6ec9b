# child.rb: a short-lived Ruby process: 15 ms of CPU in its top-level code, 25 ms in a named
# method, 10 ms in another one that runs until the process exits (parent.rb starts it many
# times). The last method is first seen in the process's last milliseconds: its name must be
# read before the process is gone.
def cpu_ms
  Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) * 1000
end

class ShortLived
  def work(until_ms)
    x = 0
    x += (1..200).sum { |i| i * i } while cpu_ms < until_ms
    x
  end

  def wind_down(until_ms)
    x = 0
    x += (1..200).sum { |i| i + 1 } while cpu_ms < until_ms
    x
  end
end

start = cpu_ms
y = 0
y += (1..200).sum while cpu_ms < start + 15
s = ShortLived.new
s.work(start + 40)
s.wind_down(start + 50)
