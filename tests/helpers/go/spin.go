// spin.go: a Go workload with a known CPU split, for the tests and benchmarks of Go
// symbolization and unwinding (built at test time, normal and stripped).
//
//	spin SECONDS [TRUTH_FILE]
//
// Two phases alternate for SECONDS: spinA calls leafA, a leaf function that sets up no frame
// (its caller must not be lost), and spinB, into which hot is inlined. spinA's share of the
// work is 2/3 of the time by construction: each round runs spinA for 2 units and spinB for 1,
// measured with the thread's CPU clock; the measured split goes to TRUTH_FILE as
// "main.spinA SECS\nmain.spinB SECS".
package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

var sink uint64

//go:noinline
func leafA(x uint64) uint64 { return x*2654435761 + 1 }

//go:noinline
func spinA(n int) {
	var x uint64
	for i := 0; i < n; i++ {
		x = leafA(x)
	}
	sink += x
}

func hot(x uint64) uint64 { return (x ^ (x >> 7)) * 31 }

//go:noinline
func spinB(n int) {
	var x uint64
	for i := 0; i < n; i++ {
		x = hot(x + uint64(i))
	}
	sink += x
}

// threadCPU: CPU time of this thread (CLOCK_THREAD_CPUTIME_ID).
func threadCPU() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

// spinFor runs f in rounds until d of thread CPU time is spent; returns the time spent.
func spinFor(d time.Duration, f func(int)) time.Duration {
	start := threadCPU()
	for threadCPU()-start < d {
		f(20000)
	}
	return threadCPU() - start
}

func main() {
	secs, _ := strconv.ParseFloat(os.Args[1], 64)
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	var a, b time.Duration
	for time.Now().Before(end) {
		a += spinFor(20*time.Millisecond, spinA)
		b += spinFor(10*time.Millisecond, spinB)
	}
	if len(os.Args) > 2 {
		os.WriteFile(os.Args[2], []byte(fmt.Sprintf("main.spinA %.3f\nmain.spinB %.3f\n",
			a.Seconds(), b.Seconds())), 0o644)
	}
}
