//go:build race

package main

// raceBuild: the test binary has the race detector, so the members are
// built with it too, from the same compiled packages.
const raceBuild = true
