//go:build !unix

package testenv

import "context"

// lockExcludes: lockFile does not keep other processes out.
const lockExcludes = false

// lockFile does not lock where flock is missing: parallel first builds then
// each build, and the rename of the finished program keeps the cache whole.
func lockFile(context.Context, string, func()) (func(), error) { return func() {}, nil }

// tryLockFile locks nothing where flock is missing: ok is always false.
func tryLockFile(string) (func(), bool) { return nil, false }

// lockDir does nothing where flock is missing.
func lockDir(string) (func(), error) { return func() {}, nil }

// removeStaleDirs removes nothing where flock is missing: whether a
// directory's process lives is not known.
func removeStaleDirs(string) {}
