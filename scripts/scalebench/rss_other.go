//go:build !unix

package main

import "os"

// maxRSS is 0 where the process's rusage is not at hand.
func maxRSS(*os.ProcessState) int64 { return 0 }
