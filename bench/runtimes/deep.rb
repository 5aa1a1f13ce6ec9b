# deep.rb: 50 Ruby frames (<main>, 48 levels of deep, spin) for the walker's cost per sample.
def spin(n)
  s = 0
  i = 0
  while i < n
    s += i
    i += 1
  end
  s
end

def deep(n, finish)
  return deep(n - 1, finish) if n > 1
  spin(1000) while Process.clock_gettime(Process::CLOCK_MONOTONIC) < finish
end

deep(48, Process.clock_gettime(Process::CLOCK_MONOTONIC) + Float(ARGV[0]))
