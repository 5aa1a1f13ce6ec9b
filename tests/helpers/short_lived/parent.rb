# parent.rb N: starts N short-lived Ruby children (child.rb, about 50 ms of CPU each) one after
# the other, each a new interpreter; the profile must name their methods (short_lived.sh).
require 'rbconfig'

n = (ARGV[0] || 40).to_i
child = File.join(__dir__, 'child.rb')
n.times { system(RbConfig.ruby, child) or raise 'child.rb failed' }
