package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// grants runs b.grants client_credentials grants (RFC 6749 §4.4) on each
// store's serve, one store after the other, from b.conns confidential
// clients registered at its registration endpoint, each client asking
// for tokens in a closed loop. Serve keeps its default token lifetime (an
// hour), so a cost that grows with the tokens issued shows as memory that
// keeps growing or a falling rate. It prints, per tenth of the grants,
// the rate and serve's CPU per grant, and serve's RSS after the first
// tenth and at the end: the last tenth's rate against the first's and
// the final RSS against the first tenth's.
func (b *bench) grants() error {
	for _, name := range b.stores {
		b.stores = []string{name}
		servers, err := b.startStores()
		if err == nil && len(servers) == 1 {
			err = grantRun(servers[0], b.grantCount, b.conns)
		}
		for _, s := range servers {
			s.stop()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// grantRun is grants on one serve.
func grantRun(s *storeServer, total, conns int) error {
	type client struct{ id, secret string }
	clients := make([]client, conns)
	for k := range clients {
		resp, err := http.Post("http://"+s.p.addr+"/register", "application/json",
			strings.NewReader(`{"grant_types":["client_credentials"],"token_endpoint_auth_method":"client_secret_basic","client_name":"bench"}`))
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var reg struct {
			ID     string `json:"client_id"`
			Secret string `json:"client_secret"`
		}
		if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &reg) != nil {
			return fmt.Errorf("register: %s: %s", resp.Status, body)
		}
		clients[k] = client{reg.ID, reg.Secret}
	}
	tenth := max(total/10, 1)
	type mark struct {
		at  time.Time
		cpu time.Duration
		rss int64
	}
	marks := make([]mark, 11)
	marks[0] = mark{time.Now(), s.p.cpu(), s.p.rss()}
	tr := &http.Transport{MaxIdleConnsPerHost: conns}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var n atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	body := []byte("grant_type=client_credentials")
	for _, c := range clients {
		wg.Go(func() {
			for {
				k := n.Add(1)
				if k > int64(tenth*10) {
					return
				}
				req, _ := http.NewRequest(http.MethodPost, "http://"+s.p.addr+"/token", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.SetBasicAuth(url.QueryEscape(c.id), url.QueryEscape(c.secret))
				resp, err := hc.Do(req)
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("grant %d: %s: %s", k, resp.Status, b)
					}
				}
				if err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
					n.Store(int64(tenth * 10))
					return
				}
				if k%int64(tenth) == 0 {
					marks[k/int64(tenth)] = mark{time.Now(), s.p.cpu(), s.p.rss()}
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	rate := func(t int) float64 { return float64(tenth) / marks[t].at.Sub(marks[t-1].at).Seconds() }
	cpu := func(t int) float64 { return float64((marks[t].cpu - marks[t-1].cpu).Microseconds()) / float64(tenth) }
	fmt.Printf("%-7s %d client_credentials grants from %d clients in a closed loop\n", s.name, tenth*10, conns)
	fmt.Printf("%-7s grants/s by tenth:", s.name)
	for t := 1; t <= 10; t++ {
		fmt.Printf(" %.0f", rate(t))
	}
	fmt.Printf("\n%-7s CPU µs per grant by tenth:", s.name)
	for t := 1; t <= 10; t++ {
		fmt.Printf(" %.0f", cpu(t))
	}
	fmt.Printf("\n%-7s last tenth / first: %.2f   RSS MiB: start %.1f, after the first tenth %.1f, end %.1f   end / first tenth: %.2f\n",
		s.name, rate(10)/rate(1), mib(marks[0].rss), mib(marks[1].rss), mib(marks[10].rss), float64(marks[10].rss)/float64(marks[1].rss))
	return nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
