// A client whose transport allows one connection per host; the server answers slowly,
// so the other callers wait in Transport.getConn for the pooled connection.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"sync"
	"time"
)

func slowHandler(w http.ResponseWriter, r *http.Request) {
	time.Sleep(30 * time.Second) // a decode worker that never answers in time
	fmt.Fprintln(w, "ok")
}

func callWorker(c *http.Client, url string, wg *sync.WaitGroup) {
	defer wg.Done()
	resp, err := c.Get(url)
	if err == nil {
		resp.Body.Close()
	}
}

func dispatch(c *http.Client, url string, n int, wg *sync.WaitGroup) {
	for i := 0; i < n; i++ {
		wg.Add(1)
		go callWorker(c, url, wg)
	}
}

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go http.Serve(ln, http.HandlerFunc(slowHandler))
	c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	url := "http://" + ln.Addr().String() + "/generate"
	var wg sync.WaitGroup
	go dispatch(c, url, 3, &wg)
	time.Sleep(2 * time.Second)
	for _, lvl := range []int{1, 2} {
		f, _ := os.Create(fmt.Sprintf("goroutine-debug%d.txt", lvl))
		pprof.Lookup("goroutine").WriteTo(f, lvl)
		f.Close()
	}
	if len(os.Args) > 1 && os.Args[1] == "quit" {
		p, _ := os.FindProcess(os.Getpid())
		p.Signal(os.Interrupt) // not caught: exits; the SIGQUIT variant is sent from outside
	}
	time.Sleep(60 * time.Second)
}
