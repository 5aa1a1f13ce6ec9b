// Spin.java: a JVM with one hot method, for the HotSpot unit tests (run with the source-file
// launcher: java Spin.java SECONDS). Spin.spin gets compiled by C1 and C2.
public class Spin {
    static volatile long sink;

    static long spin(long x) {
        for (int i = 0; i < 1000; i++)
            x = x * 31 + i;
        return x;
    }

    public static void main(String[] args) {
        long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9), x = 0;
        while (System.nanoTime() < end)
            x = spin(x);
        sink = x;
    }
}
