// cgo.go: goroutines calling C, for the tests of whole Go stacks through cgo calls
// (tests/integration/go_stacks.sh).
//
//	cgo SECONDS
//
// For SECONDS, 4 goroutines call the C function spin_c in a loop (main.workC; the C code runs
// on the system stack, called by runtime.asmcgocall) and 4 compute in Go (main.workGo).
package main

/*
static unsigned long spin_c(unsigned long n)
{
	unsigned long s = 1, i;

	for (i = 0; i < n; i++)
		s = s * 6364136223846793005UL + 1442695040888963407UL;
	return s;
}
*/
import "C"

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

var stop int32

//go:noinline
func workC() uint64 {
	var s uint64
	for atomic.LoadInt32(&stop) == 0 {
		s += uint64(C.spin_c(200000))
	}
	return s
}

//go:noinline
func workGo() uint64 {
	var s uint64 = 1
	for atomic.LoadInt32(&stop) == 0 {
		for i := 0; i < 200000; i++ {
			s = s*6364136223846793005 + 1442695040888963407
		}
	}
	return s
}

func main() {
	secs, err := strconv.ParseFloat(os.Args[1], 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "usage: cgo SECONDS")
		os.Exit(2)
	}
	var wg sync.WaitGroup
	var total uint64
	for i := 0; i < 8; i++ {
		work := workC
		if i%2 == 1 {
			work = workGo
		}
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
