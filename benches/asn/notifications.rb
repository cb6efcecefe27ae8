# The AS::N side of benches/notifications.rs: the same cases, ten subscribers per event name for each
# kind, then `instrument(name) {}`. Run by `scripts/bench-report --with-rails` right after criterion,
# so both sides are measured in one sitting; prints one JSON object {case: ns per call} on stdout.
#
#   ruby benches/asn/notifications.rb [--seconds S]
#
# Each case: a warm-up of S/4 seconds, then batches of calls for S seconds (default 1); the figure is
# the median over the batches of the time per call, as criterion reports a median.
require "json"
require "active_support"
require "active_support/notifications"

SECONDS = (ARGV.index("--seconds") ? Float(ARGV[ARGV.index("--seconds") + 1]) : 1.0)
N = ActiveSupport::Notifications
SUBSCRIBERS = 10

def now
  Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
end

# Median ns per call of `block` over batches taking ~10 ms each.
def measure(&block)
  batch = 1
  warm_until = now + (SECONDS / 4 * 1e9)
  while now < warm_until
    t = now
    batch.times(&block)
    batch *= 2 if now - t < 10_000_000
  end
  samples = []
  stop = now + SECONDS * 1e9
  while now < stop
    t = now
    batch.times(&block)
    samples << (now - t).to_f / batch
  end
  samples.sort[samples.size / 2]
end

# Subscribes `SUBSCRIBERS` of one kind to `name`, measures `instrument(name) {}`, unsubscribes.
def with_subscribers(name, make)
  subs = Array.new(SUBSCRIBERS) { make.call(name) }
  yield
ensure
  subs&.each { |s| N.unsubscribe(s) }
end

class Evented
  def start(_name, _id, _payload); end
  def finish(_name, _id, _payload); end
end

class Silenced < Evented
  def silenced?(_name) = true
end

results = {}
cases = {
  "timed" => ->(n) { N.subscribe(n) { |_name, _start, _finish, _id, _payload| } },
  "timed_monotonic" => ->(n) { N.monotonic_subscribe(n) { |_name, _start, _finish, _id, _payload| } },
  "event_object" => ->(n) { N.subscribe(n) { |_event| } },
  "evented" => ->(n) { N.subscribe(n, Evented.new) },
  "silenced" => ->(n) { N.subscribe(n, Silenced.new) },
}
cases.each do |kase, make|
  name = "#{kase}.bench"
  with_subscribers(name, make) { results[kase] = measure { N.instrument(name) {} } }
end
results["unsubscribed"] = measure { N.instrument("nobody.bench") {} }

sub = N.subscribe("payload.bench") { |_name, _start, _finish, _id, _payload| }
results["payload_3_keys"] = measure { N.instrument("payload.bench", sql: "SELECT 1", rows: 3, cached: false) {} }
N.unsubscribe(sub)

results["subscribe_unsubscribe"] = measure { N.unsubscribe(N.subscribe("pair.bench") { |*| }) }
results["subscribe_unsubscribe_regex"] = measure { N.unsubscribe(N.subscribe(/\Apair\.bench\z/) { |*| }) }

puts JSON.generate(results.merge("_version" => "ActiveSupport #{ActiveSupport::VERSION::STRING}, Ruby #{RUBY_VERSION}"))
