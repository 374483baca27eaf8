package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// The targets of the measurements, on a 2-core machine with the bench data,
// 16 concurrent clients, warm.
const (
	TargetP99           = 50 * time.Millisecond
	TargetListRPS       = 1000
	TargetMetricsRPS    = 5000
	TargetRSS           = 250 << 20
	TargetSeed          = 5 * time.Minute
	TargetSoakGrowthPct = 10 // RSS at the end at most this much above its level after warm-up
)

// Target returns the requests-per-second target of a class, or 0 when it
// has none.
func (c Class) Target() float64 {
	switch c {
	case ClassList:
		return TargetListRPS
	case ClassMetrics:
		return TargetMetricsRPS
	}
	return 0
}

// Machine describes the machine a report was made on.
func Machine() string {
	var b strings.Builder
	fmt.Fprintf(&b, "- Cores: **%d** (runtime.NumCPU)", runtime.NumCPU())
	if model := cpuModel(); model != "" {
		fmt.Fprintf(&b, ", %s", model)
	}
	b.WriteString("\n")
	if mem := memTotal(); mem != "" {
		fmt.Fprintf(&b, "- Memory: %s\n", mem)
	}
	fmt.Fprintf(&b, "- %s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if v := postgresVersion(); v != "" {
		fmt.Fprintf(&b, ", %s", v)
	}
	b.WriteString("\n")
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(load))
		if len(f) >= 3 {
			fmt.Fprintf(&b, "- Load average when the run started: %s %s %s (the machine is shared; the load generator runs on it too)\n", f[0], f[1], f[2])
		}
	}
	return b.String()
}

func cpuModel() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if name, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return ""
}

func memTotal() string {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(v), &kb)
			return fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
		}
	}
	return ""
}

func postgresVersion() string {
	paths, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if p, err := exec.LookPath("postgres"); err == nil {
		paths = append([]string{p}, paths...)
	}
	for _, p := range paths {
		if out, err := exec.Command(p, "--version").Output(); err == nil {
			return strings.TrimSpace(string(out))
		}
	}
	return ""
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

func mib(n int64) string { return fmt.Sprintf("%.0f", float64(n)/(1<<20)) }

// mark is the verdict on one target.
func mark(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

// LoadTable renders the results of a measurement as a Markdown table. With
// targets, it adds the verdict on each operation's targets; counts, when
// given, adds the statements-per-request range of requests sent one at a
// time.
func LoadTable(results []OpResult, targets bool, counts map[string]StatementRange) string {
	var b strings.Builder
	b.WriteString("| Operation | Class | Requests/s | p50 ms | p95 ms | p99 ms | max ms | SQL statements/request | Cache hits | Failed | Peak RSS MiB |")
	if targets {
		b.WriteString(" Targets |")
	}
	b.WriteString("\n|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	if targets {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range results {
		s := r.Stats
		sql := fmt.Sprintf("%.2f", r.Statements)
		if c, ok := counts[r.Op.Name]; ok {
			sql += " (each: " + c.String() + ")"
		}
		hits := "-"
		if s.Requests > 0 {
			hits = fmt.Sprintf("%.0f%%", 100*float64(s.CacheHits)/float64(s.Requests))
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %d | %s |",
			r.Op.Name, r.Op.Class, s.RPS(), ms(s.Percentile(0.5)), ms(s.Percentile(0.95)), ms(s.Percentile(0.99)), ms(s.Max()),
			sql, hits, s.CountFailed(), mib(r.PeakRSS))
		if targets {
			b.WriteString(" " + verdict(r) + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// verdict says which targets of one operation were met.
func verdict(r OpResult) string {
	s := r.Stats
	parts := []string{fmt.Sprintf("p99 ≤ 50 ms %s", mark(s.Percentile(0.99) <= TargetP99))}
	if t := r.Op.Class.Target(); t > 0 {
		parts = append(parts, fmt.Sprintf("≥ %.0f/s %s", t, mark(s.RPS() >= t)))
	}
	if s.CountFailed() > 0 {
		parts = append(parts, "failures **present**")
	}
	return strings.Join(parts, ", ")
}

// Missed lists the targets the results missed, one line each.
func Missed(results []OpResult) []string {
	var out []string
	for _, r := range results {
		s := r.Stats
		if p99 := s.Percentile(0.99); p99 > TargetP99 {
			out = append(out, fmt.Sprintf("%s: p99 %s ms > 50 ms", r.Op.Name, ms(p99)))
		}
		if t := r.Op.Class.Target(); t > 0 && s.RPS() < t {
			out = append(out, fmt.Sprintf("%s: %.0f requests/s < %.0f", r.Op.Name, s.RPS(), t))
		}
		if n := s.CountFailed(); n > 0 {
			out = append(out, fmt.Sprintf("%s: %d failed requests (%s; first: %s)", r.Op.Name, n, s.StatusSummary(), strings.Join(s.FirstErrors, "; ")))
		}
	}
	return out
}

// UpdateSection replaces the text between the markers of section name in
// the Markdown file at path (<!-- BEGIN name --> and <!-- END name -->),
// appending the section when the file lacks it and creating the file when
// it is missing. Text outside the markers, such as notes written by hand,
// is kept.
func UpdateSection(path, name, content string) error {
	begin, end := "<!-- BEGIN "+name+" -->", "<!-- END "+name+" -->"
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	block := begin + "\n" + strings.TrimRight(content, "\n") + "\n" + end
	var out []byte
	i := bytes.Index(old, []byte(begin))
	j := bytes.Index(old, []byte(end))
	if i >= 0 && j > i {
		out = append(append(bytes.Clone(old[:i]), block...), old[j+len(end):]...)
	} else {
		out = old
		if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n\n")) {
			out = append(bytes.TrimRight(out, "\n"), "\n\n"...)
		}
		out = append(out, block+"\n"...)
	}
	return os.WriteFile(path, out, 0o644)
}
