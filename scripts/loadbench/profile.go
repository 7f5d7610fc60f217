package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// profiler fetches the profiles of a contender's processes during the
// first slice it gets (see -profile): CPU, block and mutex over the
// slice, goroutines and memory statistics half-way through it, and the
// heap at its end. A nil
// profiler fetches nothing.
type profiler struct {
	dir  string
	seen map[string]bool
}

func (p *profiler) start(ctx context.Context, c contender, d time.Duration, logf func(string, ...any)) (stop func()) {
	if p == nil || p.seen[c.name] {
		return func() {}
	}
	if p.seen == nil {
		p.seen = map[string]bool{}
	}
	p.seen[c.name] = true
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		logf("profile: %v", err)
		return func() {}
	}
	secs := max(1, int(d.Seconds()))
	var wg sync.WaitGroup
	for _, pr := range c.procs {
		if pr.pprof == "" {
			logf("profile: %s serves no pprof (built without -tags pprof?)", pr.name)
			continue
		}
		fetch := func(what, query string, after time.Duration) {
			defer wg.Done()
			if after > 0 && wait(ctx, after) != nil {
				return
			}
			out := filepath.Join(p.dir, fmt.Sprintf("%s.%s.pb.gz", pr.name, what))
			if what == "goroutine" || what == "memstats" {
				out = filepath.Join(p.dir, pr.name+"."+what+".txt")
			}
			if err := download(ctx, pr.pprof+query, out); err != nil {
				logf("profile: %s %s: %v", pr.name, what, err)
			}
		}
		wg.Add(5)
		go fetch("cpu", fmt.Sprintf("profile?seconds=%d", secs), 0)
		go fetch("block", fmt.Sprintf("block?seconds=%d", secs), 0)
		go fetch("mutex", fmt.Sprintf("mutex?seconds=%d", secs), 0)
		go fetch("goroutine", "goroutine?debug=1", d/2)
		go fetch("memstats", "heap?debug=1", d/2) // ends with runtime.MemStats
	}
	return func() {
		wg.Wait()
		for _, pr := range c.procs {
			if pr.pprof != "" {
				if err := download(ctx, pr.pprof+"heap", filepath.Join(p.dir, pr.name+".heap.pb.gz")); err != nil {
					logf("profile: %s heap: %v", pr.name, err)
				}
			}
		}
	}
}

func download(ctx context.Context, url, out string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }() // read to its end by io.Copy below
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close() // the copy's error is the one to report
		return err
	}
	return f.Close()
}
