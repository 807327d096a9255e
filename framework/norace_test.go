//go:build !race

package framework

// raceEnabled is set when the tests run under the race detector.
const raceEnabled = false
