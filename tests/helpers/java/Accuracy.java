// Accuracy.java: a CPU workload with a known split, for the HotSpot profiling tests and the
// accuracy benchmark. Usage: java Accuracy SECONDS [TRUTH_FILE]
// Three threads run at once, each on one hot method, and measure their own thread CPU time:
//   recurse  leafWork() under 10 levels of recurse()                  ("recurse")
//   inline   inlinedWork(), small enough for C2 to inline into its caller ("inline")
//   deflate  java.util.zip.Deflater.deflate(): JNI into zlib         ("deflate")
// The real split is written to TRUTH_FILE as "name share" lines, with the line numbers of the
// hot statements ("line name N"); the JVM's own view of inlining comes from
// -XX:+PrintCompilation -XX:+UnlockDiagnosticVMOptions -XX:+PrintInlining when asked for.
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.Deflater;

public class Accuracy {
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static volatile long sink;

    static long leafWork(long seed) {
        long x = seed;
        for (long i = 0; i < 20000; i++) {
            x = x * 6364136223846793005L + i; // LINE_RECURSE
        }
        return x;
    }

    static long recurse(int depth, long seed) {
        if (depth > 0)
            return recurse(depth - 1, seed) + 1;
        return leafWork(seed);
    }

    static long inlinedWork(long x) {
        for (long i = 0; i < 2000; i++) {
            x ^= (x << 13) + i; // LINE_INLINE
        }
        return x;
    }

    static long inlineCaller(long seed) {
        long s = 0;
        for (int i = 0; i < 100; i++)
            s += inlinedWork(seed + i);
        return s;
    }

    static final byte[] DATA = new byte[1 << 18];
    static {
        long x = 1;
        for (int i = 0; i < DATA.length; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            DATA[i] = (byte) ((x >>> 59) + 'a'); // compressible, not trivially
        }
    }

    static long deflateWork() {
        Deflater d = new Deflater(9);
        byte[] out = new byte[1 << 16];
        long n = 0;
        d.setInput(DATA);
        d.finish();
        while (!d.finished())
            n += d.deflate(out); // LINE_DEFLATE
        d.end();
        return n;
    }

    interface Work { long run(long seed); }

    static class Worker extends Thread {
        final Work work;
        final long endNanos;
        long cpu;

        Worker(String name, Work work, long endNanos) {
            super(name);
            this.work = work;
            this.endNanos = endNanos;
        }

        @Override
        public void run() {
            long t0 = MX.getCurrentThreadCpuTime(), seed = 0;
            while (System.nanoTime() < endNanos)
                sink += work.run(seed++);
            cpu = MX.getCurrentThreadCpuTime() - t0;
        }
    }

    public static void main(String[] args) throws Exception {
        double seconds = Double.parseDouble(args[0]);
        long end = System.nanoTime() + (long) (seconds * 1e9);
        List<Worker> workers = new ArrayList<>();
        workers.add(new Worker("recurse", s -> recurse(10, s), end));
        workers.add(new Worker("inline", Accuracy::inlineCaller, end));
        workers.add(new Worker("deflate", s -> deflateWork(), end));
        for (Worker w : workers)
            w.start();
        for (Worker w : workers)
            w.join();
        if (args.length < 2)
            return;
        long total = 0;
        for (Worker w : workers)
            total += w.cpu;
        StringBuilder sb = new StringBuilder();
        String[] names = { "leafWork", "inlinedWork", "deflateWork" };
        for (int i = 0; i < 3; i++)
            sb.append(String.format("%s %.4f%n", names[i], (double) workers.get(i).cpu / total));
        List<String> src = Files.readAllLines(Paths.get(args.length > 2 ? args[2] : "Accuracy.java"));
        String[][] tags = { { "LINE_RECURSE", "leafWork" }, { "LINE_INLINE", "inlinedWork" },
                            { "LINE_DEFLATE", "deflateWork" } };
        for (int n = 0; n < src.size(); n++)
            for (String[] t : tags)
                if (src.get(n).endsWith("// " + t[0]))
                    sb.append(String.format("line %s %d%n", t[1], n + 1));
        Files.write(Paths.get(args[1]), sb.toString().getBytes());
    }
}
