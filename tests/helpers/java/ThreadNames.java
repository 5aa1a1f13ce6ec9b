// ThreadNames.java: Java threads whose names are longer than the kernel's 15-byte comm, named
// in each way Java allows (java ThreadNames SECONDS):
//   worker-with-a-very-long-name-alpha   named by its constructor (comm: its first 15 bytes)
//   renamed-from-outside-beta-long       renamed by main after it started (comm: Thread-N)
//   phase-one-of-a-renamed-thread-gamma  renames itself halfway through to
//   phase-two-of-a-renamed-thread-gamma  (comm follows: its first 15 bytes, the same for both)
//   unicode-名前-δοκιμή-delta              a name stored as UTF-16 in the JVM
// Each spins until the time is up. "ready" is printed once every thread runs under its name.
import java.util.concurrent.CountDownLatch;

public class ThreadNames {
    static volatile long sink;

    static void spinUntil(long end) {
        long x = 0;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 10000; i++)
                x = x * 31 + i;
        }
        sink = x;
    }

    public static void main(String[] args) throws Exception {
        long ns = (long) (Double.parseDouble(args[0]) * 1e9);
        long start = System.nanoTime(), end = start + ns;
        CountDownLatch go = new CountDownLatch(1);

        Thread alpha = new Thread(() -> spinUntil(end), "worker-with-a-very-long-name-alpha");
        Thread beta = new Thread(() -> {
            try {
                go.await();
            } catch (InterruptedException e) {
                return;
            }
            spinUntil(end);
        });
        Thread gamma = new Thread(() -> {
            spinUntil(start + ns / 2);
            Thread.currentThread().setName("phase-two-of-a-renamed-thread-gamma");
            spinUntil(end);
        }, "phase-one-of-a-renamed-thread-gamma");
        Thread delta = new Thread(() -> spinUntil(end), "unicode-\u540d\u524d-\u03b4\u03bf\u03ba\u03b9\u03bc\u03ae-delta");
        beta.start();
        // renamed from outside once it runs: the kernel keeps the name it started with
        while (beta.getState() != Thread.State.WAITING)
            Thread.sleep(1);
        beta.setName("renamed-from-outside-beta-long");
        go.countDown();
        alpha.start();
        gamma.start();
        delta.start();
        System.out.println("ready");
        System.out.flush();
        alpha.join();
        beta.join();
        gamma.join();
        delta.join();
    }
}
