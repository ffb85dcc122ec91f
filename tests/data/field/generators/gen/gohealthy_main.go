// An idle, healthy HTTP service: the accept loop, a metrics ticker, a signal watcher.
package main

import (
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func scrapeLoop(t *time.Ticker) {
	for range t.C {
	}
}

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	http.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })
	go scrapeLoop(time.NewTicker(5 * time.Second))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	go func() { <-sig; os.Exit(0) }()
	http.Serve(ln, nil)
}
