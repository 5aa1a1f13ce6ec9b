// JfrWork.java: a Java workload for the JFR tests with a known CPU split and every kind of event
// scorch reads from a recording.
//
//   java JfrWork MILLIS THREADS [MIN_SAMPLES]
//
// THREADS worker threads ("worker-N") each loop over hotA (70% of the work) then hotB (30%),
// measuring the CPU time of both (the thread's own CPU clock, so that time spent preempted on a
// busy machine counts for neither); at the end the program prints its own measure of the split
// and the same in wall-clock time:
//   split hotA=0.7012 hotB=0.2988
//   wall hotA=0.6934 hotB=0.3066
//   running 0.9871
// ("running": the workers' CPU time over their wall-clock time in hotA and hotB, i.e. how much
// of it they were on a CPU rather than preempted.)
// Two more threads ("contender-1", "contender-2") fight over a monitor (jdk.JavaMonitorEnter) and
// a ReentrantLock (jdk.ThreadPark); the main thread allocates small arrays (in new TLABs) and
// large ones (outside TLABs). With MIN_SAMPLES, the run goes on past MILLIS (up to 8x) until the
// recording holds that many execution samples of the workers, counted in-process by a JFR
// event stream; it prints "samples N" (what the stream saw).
// Run with -XX:CompileCommand=dontinline,JfrWork::* so that each method keeps its own frame.
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

public class JfrWork {
    static volatile long sink;
    static final Object monitor = new Object();
    static final ReentrantLock lock = new ReentrantLock();

    static long spin(long n, long seed) {
        long x = seed;
        for (long i = 0; i < n; i++) x = x * 6364136223846793005L + i;
        return x;
    }
    static long hotA(long n) { return spin(n, 1); }
    static long hotB(long n) { return spin(n, 2); }

    static void allocate() {
        for (int i = 0; i < 64; i++) { byte[] b = new byte[2048]; sink += b.length; }
        byte[] big = new byte[2 << 20];
        sink += big.length;
    }
    static void holdMonitor() throws InterruptedException { synchronized (monitor) { Thread.sleep(1); } }
    static void holdLock() throws InterruptedException {
        lock.lock();
        try { Thread.sleep(1); } finally { lock.unlock(); }
    }

    public static void main(String[] args) throws Exception {
        long millis = Long.parseLong(args[0]);
        int nthreads = Integer.parseInt(args[1]);
        long minSamples = args.length > 2 ? Long.parseLong(args[2]) : 0;
        long start = System.nanoTime();
        long end = start + millis * 1_000_000L, hardEnd = start + 8 * millis * 1_000_000L;
        AtomicLong samples = new AtomicLong();
        jdk.jfr.consumer.RecordingStream rs = null;
        if (minSamples > 0) {
            rs = new jdk.jfr.consumer.RecordingStream();
            rs.enable("jdk.ExecutionSample").withPeriod(Duration.ofMillis(1));
            rs.onEvent("jdk.ExecutionSample", e -> {
                String name = e.getThread("sampledThread").getJavaName();
                if (name != null && name.startsWith("worker-")) samples.incrementAndGet();
            });
            rs.startAsync();
        }
        final java.util.function.BooleanSupplier done = () -> {
            long now = System.nanoTime();
            return now >= hardEnd || (now >= end && samples.get() >= minSamples);
        };
        long[] ta = new long[nthreads], tb = new long[nthreads];
        long[] wa = new long[nthreads], wb = new long[nthreads];
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        Thread[] workers = new Thread[nthreads];
        for (int k = 0; k < nthreads; k++) {
            final int id = k;
            workers[k] = new Thread(() -> {
                while (!done.getAsBoolean()) {
                    long c0 = mx.getCurrentThreadCpuTime(), w0 = System.nanoTime();
                    sink += hotA(70000);
                    long c1 = mx.getCurrentThreadCpuTime(), w1 = System.nanoTime();
                    sink += hotB(30000);
                    long c2 = mx.getCurrentThreadCpuTime(), w2 = System.nanoTime();
                    ta[id] += c1 - c0;
                    tb[id] += c2 - c1;
                    wa[id] += w1 - w0;
                    wb[id] += w2 - w1;
                }
            }, "worker-" + k);
            workers[k].start();
        }
        Runnable contend = () -> {
            try {
                while (!done.getAsBoolean()) { holdMonitor(); holdLock(); }
            } catch (InterruptedException e) { }
        };
        Thread c1 = new Thread(contend, "contender-1"), c2 = new Thread(contend, "contender-2");
        c1.start();
        c2.start();
        while (!done.getAsBoolean()) { allocate(); Thread.sleep(5); }
        long sa = 0, sb = 0, swa = 0, swb = 0;
        for (int k = 0; k < nthreads; k++) {
            workers[k].join();
            sa += ta[k]; sb += tb[k]; swa += wa[k]; swb += wb[k];
        }
        c1.join();
        c2.join();
        if (rs != null) rs.close();
        System.out.printf("split hotA=%.4f hotB=%.4f%n", (double) sa / (sa + sb), (double) sb / (sa + sb));
        System.out.printf("wall hotA=%.4f hotB=%.4f%n", (double) swa / (swa + swb), (double) swb / (swa + swb));
        System.out.printf("running %.4f%n", (double) (sa + sb) / (swa + swb));
        System.out.println("samples " + samples.get());
    }
}
