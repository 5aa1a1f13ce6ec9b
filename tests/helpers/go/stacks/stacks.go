// stacks.go: many goroutines, for the tests of whole Go stacks (tests/integration/go_stacks.sh).
//
//	stacks SECONDS
//
// For SECONDS, 24 goroutines run three kinds of work: main.workNow calls time.Now in its hot
// loop (time.now calls the vDSO on the system stack), main.workAlloc allocates and recurses,
// in new goroutines too (the runtime's systemstack, morestack growing new goroutines' stacks,
// the garbage collector), main.workCompute only
// computes; main.main keeps starting short goroutines (runtime.newproc).
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

var stop int32
var total uint64

//go:noinline
func workNow() uint64 {
	var s uint64
	for atomic.LoadInt32(&stop) == 0 {
		s += uint64(time.Now().UnixNano())
	}
	return s
}

//go:noinline
func grow(depth int, b []byte) int {
	var pad [256]byte
	pad[depth&255] = byte(depth)
	if depth == 0 {
		return len(b) + int(pad[0])
	}
	return grow(depth-1, b) + int(pad[depth&255])
}

var keep [][]byte

//go:noinline
func workAlloc() uint64 {
	var s uint64
	for atomic.LoadInt32(&stop) == 0 {
		b := make([]byte, 4096)
		s += uint64(grow(64, b))
		done := make(chan int)
		// a new goroutine's stack starts small: the recursion grows it (morestack and
		// newstack's copystack, on the system stack)
		go func() { done <- grow(48, b) }()
		s += uint64(<-done)
	}
	return s
}

//go:noinline
func workCompute() uint64 {
	var s uint64 = 1
	for atomic.LoadInt32(&stop) == 0 {
		for i := 0; i < 1000; i++ {
			s = s*6364136223846793005 + 1442695040888963407
		}
	}
	return s
}

func main() {
	secs, err := strconv.ParseFloat(os.Args[1], 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "usage: stacks SECONDS")
		os.Exit(2)
	}
	var wg sync.WaitGroup
	for i := 0; i < 24; i++ {
		work := []func() uint64{workNow, workAlloc, workCompute}[i%3]
		wg.Add(1)
		go func() {
			defer wg.Done()
			atomic.AddUint64(&total, work())
		}()
	}
	time.Sleep(time.Duration(secs * float64(time.Second)))
	atomic.StoreInt32(&stop, 1)
	wg.Wait()
	fmt.Println(atomic.LoadUint64(&total) != 0)
}
