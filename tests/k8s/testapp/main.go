// Command testapp is the real node's test application: it serves berth's
// production contract (the probes on /health/live and /health/ready of the
// `http` port, 9000 unless PORT says otherwise) and one request endpoint,
// /report, that tells what the process sees of its sandbox.
//
// Switches, set through the Runtime's config env:
//
//	TESTAPP_FAIL_READY=1  /health/ready answers 503 (the pod never becomes Ready)
//	TESTAPP_FAIL_LIVE=1   /health/live answers 503 (the kubelet restarts it)
//
// and at run time, POST /fail/ready and POST /ok/ready flip readiness.
//
// With arguments (a Job's or CronJob's command, e.g. `/testapp migrate`) it
// prints them and exits 0: a one-shot task that succeeds.
package main

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
)

const tokenDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// report is what GET /report answers.
type report struct {
	UID, GID     int
	TokenMounted bool
	// RootWrite is the error writing a file at / gave ("" if it succeeded).
	RootWrite string
	// RootMount is the options of the "/" mount in /proc/self/mounts
	// ("ro,…" on a read-only root, whichever error the write met first).
	RootMount string
	// Kernel is /proc/version: gVisor's own under runsc.
	Kernel string
	// Status holds the CapEff, NoNewPrivs and Seccomp lines of /proc/self/status.
	Status map[string]string
	// OpenFilesLimit is the soft "Max open files" of /proc/self/limits
	// (bounded-runc's base spec lowers it).
	OpenFilesLimit string
	Hostname       string
}

func main() {
	if len(os.Args) > 1 {
		fmt.Printf("testapp: task %q done (uid %d)\n", strings.Join(os.Args[1:], " "), os.Getuid())
		return
	}
	var failReady atomic.Bool
	failReady.Store(os.Getenv("TESTAPP_FAIL_READY") == "1")
	failLive := os.Getenv("TESTAPP_FAIL_LIVE") == "1"
	probe := func(fail func() bool) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			if fail() {
				http.Error(w, "failing on purpose", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ok")
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/health/live", probe(func() bool { return failLive }))
	mux.HandleFunc("/health/ready", probe(failReady.Load))
	mux.HandleFunc("POST /fail/ready", func(w http.ResponseWriter, _ *http.Request) { failReady.Store(true) })
	mux.HandleFunc("POST /ok/ready", func(w http.ResponseWriter, _ *http.Request) { failReady.Store(false) })
	mux.HandleFunc("/report", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(gather())
	})
	port := os.Getenv("PORT")
	if port == "" {
		port = "9000"
	}
	log.Printf("testapp listening on :%s (uid %d)", port, os.Getuid())
	log.Fatal(http.ListenAndServe(":"+port, mux))
}

func gather() report {
	r := report{UID: os.Getuid(), GID: os.Getgid(), Status: map[string]string{}}
	if _, err := os.Stat(tokenDir + "/token"); err == nil {
		r.TokenMounted = true
	}
	if err := os.WriteFile("/berth-testapp-probe", []byte("x"), 0o600); err != nil {
		r.RootWrite = err.Error()
	} else {
		_ = os.Remove("/berth-testapp-probe")
	}
	if b, err := os.ReadFile("/proc/version"); err == nil {
		r.Kernel = strings.TrimSpace(string(b))
	} else {
		r.Kernel = "unreadable: " + err.Error()
	}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if ok && (k == "CapEff" || k == "NoNewPrivs" || k == "Seccomp" || k == "Uid") {
				r.Status[k] = strings.TrimSpace(v)
			}
		}
	}
	if b, err := os.ReadFile("/proc/self/mounts"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 4 && f[1] == "/" {
				r.RootMount = f[3]
			}
		}
	}
	if b, err := os.ReadFile("/proc/self/limits"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 4 && strings.HasPrefix(line, "Max open files") {
				r.OpenFilesLimit = f[3]
			}
		}
	}
	r.Hostname, _ = os.Hostname()
	return r
}
