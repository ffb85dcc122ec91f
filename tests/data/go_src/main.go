// Command wedge is a sample for real goroutine dumps: a TCP server on 127.0.0.1 that
// accepts and never answers, 30 goroutines blocked in http.Client.Do against it (started in
// three waves of 10, -gap apart, so their waits differ), and net/http/pprof on another
// 127.0.0.1 port, plus a goroutine that runs the GC. It prints both addresses and then waits.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"sync"
	"time"
)

// collect runs the GC now and then: Go records how long a goroutine has waited only
// from a GC onwards, so without one no "N minutes" ever shows in a dump.
func collect() {
	for {
		runtime.GC()
		time.Sleep(20 * time.Second)
	}
}

func blackhole(ln net.Listener, mu *sync.Mutex, held *[]net.Conn) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		mu.Lock()
		*held = append(*held, c)
		mu.Unlock()
	}
}

func callBackend(client *http.Client, url string, wg *sync.WaitGroup) {
	defer wg.Done()
	resp, err := client.Get(url)
	if err == nil {
		resp.Body.Close()
	}
}

func main() {
	gap := flag.Duration("gap", 0, "pause between the three waves of 10 callers")
	flag.Parse()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var mu sync.Mutex
	var held []net.Conn
	go blackhole(ln, &mu, &held)

	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go http.Serve(pl, nil)

	client := &http.Client{}
	url := "http://" + ln.Addr().String() + "/generate"
	var wg sync.WaitGroup
	go collect()
	fmt.Printf("backend %s pprof %s\n", ln.Addr(), pl.Addr())
	for i := 0; i < 30; i++ {
		if i > 0 && i%10 == 0 {
			time.Sleep(*gap)
		}
		wg.Add(1)
		go callBackend(client, url, &wg)
	}
	wg.Wait()
}
