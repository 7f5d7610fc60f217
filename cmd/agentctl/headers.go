package main

import (
	"fmt"
	"net/http"
	"os"
	"strings"
)

// headerFlags are the --header values of a command that reaches an MCP
// server over streamable HTTP: "Name: value", where $VAR (or ${VAR}) in the
// value is read from the environment and a word @FILE is replaced by the
// file's contents ("Authorization: Bearer $TOKEN", "Authorization: Bearer
// @token.txt"), so a token need not stand on the command line. Values are
// secrets: no message shows them.
type headerFlags []string

// headers parses the --header values into an http.Header.
func (hf headerFlags) headers(getenv func(string) string) (http.Header, error) {
	h := http.Header{}
	for _, raw := range hf {
		name, value, ok := strings.Cut(raw, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, exitf(exitUsage, "--header %q: want 'Name: value' (value may be $VAR or @FILE)", shorten(name, 40))
		}
		var missing string
		value = os.Expand(value, func(v string) string {
			got := getenv(v)
			if got == "" && missing == "" {
				missing = v
			}
			return got
		})
		if missing != "" {
			return nil, exitf(exitUsage, "--header %s: the environment variable %s is empty or unset; export it, or give the value another way", name, missing)
		}
		words := strings.Fields(value)
		for i, w := range words {
			if !strings.HasPrefix(w, "@") || len(w) == 1 {
				continue
			}
			b, err := os.ReadFile(w[1:])
			if err != nil {
				return nil, exitf(exitUsage, "--header %s: cannot read %s: %v", name, w[1:], errWithoutPath(err))
			}
			words[i] = strings.TrimSpace(string(b))
		}
		value = strings.Join(words, " ")
		if value == "" || strings.ContainsAny(value, "\r\n") {
			return nil, exitf(exitUsage, "--header %s: the value is empty or spans lines; give one line", name)
		}
		h.Add(name, value)
	}
	return h, nil
}

// errWithoutPath keeps only what went wrong of a file error; the caller
// names the file.
func errWithoutPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// withHeaders returns an HTTP client that adds h to every request, or nil
// (the default client) when h is empty.
func withHeaders(h http.Header) *http.Client {
	if len(h) == 0 {
		return nil
	}
	return &http.Client{Transport: headerTransport{next: http.DefaultTransport, h: h}}
}

type headerTransport struct {
	next http.RoundTripper
	h    http.Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for name, vs := range t.h {
		r.Header[name] = append([]string(nil), vs...)
	}
	return t.next.RoundTrip(r)
}

func (hf *headerFlags) String() string { return fmt.Sprintf("%d headers", len(*hf)) }
func (hf *headerFlags) Set(v string) error {
	*hf = append(*hf, v)
	return nil
}
func (hf *headerFlags) Type() string { return "'Name: value'" }
