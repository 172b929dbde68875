// Command prometheus serves a store's metrics for Prometheus to scrape: the
// store reports through an observer (package otelstore), OpenTelemetry's
// Prometheus exporter turns the metrics into the exposition format. It
// reserves a range every 100ms on the in-memory driver by default; point it
// at ZooKeeper with
//
//	go run . -driver zookeeper -o connectString=127.0.0.1:2181
//
// then read http://localhost:2112/metrics, and the handlers of package
// storehttp: /healthz (liveness), /readyz (readiness), /status (the status
// page) and /status.json. Every other path is 404: a probe pointed at a
// wrong path fails instead of reading the metrics page.
//
// It is a module of its own: OpenTelemetry and the Prometheus client stay
// out of the store's module.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/cosid-go/store"
	_ "github.com/cosid-go/store/drivers/memory"
	_ "github.com/cosid-go/store/drivers/zookeeper"
	"github.com/cosid-go/store/idgen"
	"github.com/cosid-go/store/otelstore"
	"github.com/cosid-go/store/storehttp"
)

type optionFlags map[string]string

func (o optionFlags) String() string { return fmt.Sprint(map[string]string(o)) }
func (o optionFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("option %q is not key=value", s)
	}
	o[k] = v
	return nil
}

func main() {
	driverName := flag.String("driver", "memory", "registered driver")
	addr := flag.String("listen", "localhost:2112", "address of the /metrics endpoint")
	options := optionFlags{}
	flag.Var(options, "o", "driver option key=value (repeatable)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *driverName, options, *addr); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, driverName string, options map[string]string, addr string) error {
	handler, seg, closeAll, err := setup(ctx, driverName, options)
	if err != nil {
		return err
	}
	defer closeAll()
	srv := &http.Server{Addr: addr, Handler: handler}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	go work(ctx, seg)
	log.Printf("metrics on http://%s/metrics, status on http://%s/status", addr, addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// setup opens the store with its metrics exported to a registry of its
// own and a status monitor, opens a segment generator on it, and returns
// the handler that serves the metrics and the status on their paths.
func setup(ctx context.Context, driverName string, options map[string]string) (http.Handler, *idgen.Segment, func(), error) {
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	metrics, err := otelstore.NewMetrics(mp, attribute.String("store", driverName))
	if err != nil {
		mp.Shutdown(ctx)
		return nil, nil, nil, err
	}
	mon := storehttp.New(storehttp.Options{})
	open, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := store.OpenContext(open, driverName, options,
		store.WithObserver(metrics.Observer()),
		store.WithObserver(mon.Observer()),
		store.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
	if err != nil {
		metrics.Close()
		mp.Shutdown(ctx)
		return nil, nil, nil, err
	}
	mon.Attach(st)
	seg, err := idgen.NewSegment(open, st, "orders", idgen.SegmentOptions{Step: 100})
	if err != nil {
		st.Close()
		metrics.Close()
		mp.Shutdown(ctx)
		return nil, nil, nil, err
	}
	metrics.Add(seg)
	mon.Add(seg)
	closeAll := func() {
		seg.Close(context.Background())
		st.Close()
		metrics.Close()
		mp.Shutdown(context.Background())
	}
	// Exact paths: "/" would answer every path with the metrics page.
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/healthz", mon.Live())
	mux.Handle("/readyz", mon.Ready())
	mux.Handle("/status", mon.Status())
	mux.Handle("/status.json", mon.StatusJSON())
	return mux, seg, closeAll, nil
}

// work takes an ID every 100ms until ctx ends.
func work(ctx context.Context, seg *idgen.Segment) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			seg.NextID(ctx) // failures show in the metrics and on the status page
		}
	}
}
