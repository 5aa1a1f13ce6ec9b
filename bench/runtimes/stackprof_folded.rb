# stackprof_folded.rb: runs a Ruby script under stackprof (Debian's ruby-stackprof, CPU mode)
# and writes its raw samples as folded lines with frames "name (file:line)", root first, for
# tests/helpers/runtimes/check_accuracy.py. stackprof records one line per method (its
# definition's), not the line that ran; C functions get "(<cfunc>:0)".
# Usage: SP_OUT=out.folded [SP_INTERVAL=usec] ruby stackprof_folded.rb SCRIPT ARGS...
require "stackprof"

out = ENV.fetch("SP_OUT")
StackProf.start(mode: :cpu, interval: Integer(ENV["SP_INTERVAL"] || 2000), raw: true)
at_exit do
  StackProf.stop
  data = StackProf.results
  frames = data[:frames]
  raw = data[:raw] || []
  script = File.expand_path($0)
  File.open(out, "w") do |f|
    i = 0
    while i < raw.size
      len = raw[i]
      stack = raw[i + 1, len]
      count = raw[i + 1 + len]
      names = stack.map do |id|
        fr = frames[id] || {}
        name = fr[:name].to_s
        file = fr[:file].to_s
        next nil if file == __FILE__ || (name == "Kernel#load" && file == "<cfunc>")
        name = "<main>" if name == "<top (required)>" && File.expand_path(file) == script
        "#{name} (#{file}:#{fr[:line] || 0})"
      end.compact
      f.puts "ruby;" + names.join(";") + " #{count}"
      i += len + 2
    end
  end
end
$0 = ARGV.shift
load $0
