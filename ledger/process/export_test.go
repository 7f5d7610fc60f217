package process

// ProcessStart exposes processStart to the external tests.
var ProcessStart = processStart
