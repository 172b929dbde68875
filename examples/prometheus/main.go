// Command prometheus serves a store's metrics for Prometheus to scrape: the
// store reports through an observer (package otelstore), OpenTelemetry's
// Prometheus exporter turns the metrics into the exposition format. It
// reserves a range every 100ms on the in-memory driver by default; point it
// at ZooKeeper with
//
//	go run . -driver zookeeper -o connectString=127.0.0.1:2181
//
// then read http://localhost:2112/metrics.
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
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/cosid-go/store"
	_ "github.com/cosid-go/store/drivers/memory"
	_ "github.com/cosid-go/store/drivers/zookeeper"
	"github.com/cosid-go/store/otelstore"
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
	handler, st, closeAll, err := setup(ctx, driverName, options)
	if err != nil {
		return err
	}
	defer closeAll()
	srv := &http.Server{Addr: addr, Handler: handler}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	go work(ctx, st)
	log.Printf("metrics on http://%s/metrics", addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// setup opens the store with its metrics exported to a registry of its
// own, and returns the handler that serves them.
func setup(ctx context.Context, driverName string, options map[string]string) (http.Handler, *store.Store, func(), error) {
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	metrics, err := otelstore.New(mp)
	if err != nil {
		mp.Shutdown(ctx)
		return nil, nil, nil, err
	}
	open, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := store.OpenContext(open, driverName, options,
		store.WithObserver(metrics.Observer()),
		store.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
	if err != nil {
		metrics.Close()
		mp.Shutdown(ctx)
		return nil, nil, nil, err
	}
	closeAll := func() {
		st.Close()
		metrics.Close()
		mp.Shutdown(context.Background())
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), st, closeAll, nil
}

// work reserves a range every 100ms until ctx ends.
func work(ctx context.Context, st *store.Store) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			st.Ranges().Next(ctx, "orders", 100) // failures show in the metrics
		}
	}
}
