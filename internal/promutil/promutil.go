// Package promutil holds the one registration rule every operatorkit
// package follows: register a collector on the configured Registerer, and
// when an identical collector is already registered (a second Framework, a
// second wrapped resource) use that one, so that many users share a registry.
package promutil

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/operatorkit/operatorkit/internal/nilptr"
)

// Register registers c on reg and returns the collector to use: c itself,
// or the one already registered under the same descriptors. A nil reg, or
// a nil pointer such as a nil *prometheus.Registry, registers nothing and
// returns c. Any other registration error, such as
// the same name with other labels, is returned.
func Register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	if nilptr.Is(reg) {
		return c, nil
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(T); ok {
				return existing, nil
			}
			return c, fmt.Errorf("register metrics: collector of another type already registered: %w", err)
		}
		return c, fmt.Errorf("register metrics: %w", err)
	}
	return c, nil
}

// RegisterCollector is Register for collectors that need not be shared: an
// already registered one is fine, nothing is returned.
func RegisterCollector(reg prometheus.Registerer, c prometheus.Collector) error {
	_, err := Register(reg, c)
	return err
}
