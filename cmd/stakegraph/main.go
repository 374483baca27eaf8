// Command stakegraph serves a read-only REST and GraphQL API over
// EigenLayer restaking data stored in PostgreSQL, and manages that
// database: migrations, demo data and API keys.
//
// Run `stakegraph help` for the subcommands, their flags and the
// environment variables that stand for them. Without DATABASE_URL every
// subcommand uses a private PostgreSQL cluster under $STAKEGRAPH_HOME
// (./.stakegraph), started with the machine's PostgreSQL programs and
// stopped again when the last command using it exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/stakegraph/stakegraph/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, a second one kills the process at once.
		<-ctx.Done()
		stop()
	}()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command failed
	exitUsage = 2 // the command line is wrong
)

// command is one subcommand.
type command struct {
	name    string // one or two words: "migrate", "keys create"
	args    string // the positional arguments, for help
	summary string
	// flags registers the command's own flags on fs and returns the
	// function that runs the command with them.
	flags func(fs *flag.FlagSet, c *cli) func(ctx context.Context, args []string) error
}

// commands are every subcommand, in the order help lists them.
var commands = []command{
	migrateCommand,
	indexCommand,
	seedDemoCommand,
	seedBenchCommand,
	keysCreateCommand,
	keysListCommand,
	keysRevokeCommand,
	serveCommand,
	localpgStartCommand,
	localpgStopCommand,
	localpgStatusCommand,
	versionCommand,
}

// usageError is a wrong command line; run prints it with a pointer to help.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// run runs the stakegraph command line args and returns the exit code.
// getenv reads the environment.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	c := &cli{getenv: getenv, stdout: stdout, stderr: stderr}
	if err := c.opts.fromEnv(getenv); err != nil {
		fmt.Fprintf(stderr, "stakegraph: %s\n", oneLine(err))
		return exitUsage
	}

	global := flag.NewFlagSet("stakegraph", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	c.opts.register(global)
	showVersion := global.Bool("version", false, "print the version and exit")
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.help(stdout, nil)
			return exitOK
		}
		fmt.Fprintf(stderr, "stakegraph: %s (run 'stakegraph help')\n", oneLine(err))
		return exitUsage
	}
	if *showVersion {
		fmt.Fprintf(stdout, "stakegraph %s\n", version.Version)
		return exitOK
	}
	rest := global.Args()
	if len(rest) == 0 {
		c.help(stderr, nil)
		return exitUsage
	}
	if rest[0] == "help" {
		return c.helpCommand(rest[1:])
	}

	cmd, n, err := findCommand(rest)
	if err != nil {
		fmt.Fprintf(stderr, "stakegraph: %s (run 'stakegraph help')\n", oneLine(err))
		return exitUsage
	}
	fs := flag.NewFlagSet("stakegraph "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.opts.register(fs)
	runCmd := cmd.flags(fs, c)
	if err := fs.Parse(rest[n:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.commandHelp(stdout, cmd)
			return exitOK
		}
		fmt.Fprintf(stderr, "stakegraph %s: %s (run 'stakegraph help %s')\n", cmd.name, oneLine(err), cmd.name)
		return exitUsage
	}
	if err := c.setup(); err != nil {
		fmt.Fprintf(stderr, "stakegraph %s: %s\n", cmd.name, oneLine(err))
		return exitUsage
	}
	if err := runCmd(ctx, fs.Args()); err != nil {
		var uerr usageError
		if errors.As(err, &uerr) {
			fmt.Fprintf(stderr, "stakegraph %s: %s (run 'stakegraph help %s')\n", cmd.name, oneLine(err), cmd.name)
			return exitUsage
		}
		fmt.Fprintf(stderr, "stakegraph %s: %s\n", cmd.name, oneLine(err))
		return exitError
	}
	return exitOK
}

// findCommand finds the command that args start with and returns how many
// words name it.
func findCommand(args []string) (command, int, error) {
	if len(args) > 1 {
		for _, cmd := range commands {
			if cmd.name == args[0]+" "+args[1] {
				return cmd, 2, nil
			}
		}
	}
	var subs []string
	for _, cmd := range commands {
		if cmd.name == args[0] {
			return cmd, 1, nil
		}
		if group, sub, ok := strings.Cut(cmd.name, " "); ok && group == args[0] {
			subs = append(subs, sub)
		}
	}
	if len(subs) > 0 {
		if len(args) > 1 {
			return command{}, 0, fmt.Errorf("unknown subcommand %q of %s (want %s)", args[1], args[0], strings.Join(subs, ", "))
		}
		return command{}, 0, fmt.Errorf("%s needs a subcommand: %s", args[0], strings.Join(subs, ", "))
	}
	return command{}, 0, fmt.Errorf("unknown command %q", args[0])
}

// oneLine flattens an error message onto one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
}

func (c *cli) helpCommand(args []string) int {
	if len(args) == 0 {
		c.help(c.stdout, nil)
		return exitOK
	}
	cmd, _, err := findCommand(args)
	if err != nil {
		fmt.Fprintf(c.stderr, "stakegraph help: %s\n", oneLine(err))
		return exitUsage
	}
	c.commandHelp(c.stdout, cmd)
	return exitOK
}

// help writes the overview: every command, then the flags all commands take.
func (c *cli) help(w io.Writer, _ []string) {
	fmt.Fprintf(w, "stakegraph %s: a read-only REST and GraphQL API over EigenLayer restaking data.\n\n", version.Version)
	fmt.Fprintf(w, "Usage:\n  stakegraph [global flags] <command> [flags] [arguments]\n\nCommands:\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, cmd := range commands {
		fmt.Fprintf(tw, "  %s %s\t%s\n", cmd.name, cmd.args, cmd.summary)
	}
	fmt.Fprintf(tw, "  help [command]\tshow this help, or a command's flags\n")
	tw.Flush()
	fmt.Fprintf(w, "\nGlobal flags (accepted before or after the command; the environment variable sets the default):\n")
	noEnv := func(string) string { return "" } // help shows the built-in defaults
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	var opts options
	opts.fromEnv(noEnv)
	opts.register(fs)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	printFlags(tw, "", fs)
	fmt.Fprintf(tw, "  \t--version\tprint the version and exit\n")
	tw.Flush()
	fmt.Fprintf(w, "\nCommand flags:\n")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, cmd := range commands {
		fs := flag.NewFlagSet("", flag.ContinueOnError)
		cmd.flags(fs, &cli{getenv: noEnv, opts: opts})
		printFlags(tw, cmd.name, fs)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nWithout DATABASE_URL, commands use a local PostgreSQL cluster in $STAKEGRAPH_HOME/pg,\n"+
		"started when needed (as the postgres OS user when run as root) and stopped when the last\n"+
		"command using it exits; `stakegraph localpg start` keeps it running.\n")
}

// commandHelp writes one command's usage and flags.
func (c *cli) commandHelp(w io.Writer, cmd command) {
	fmt.Fprintf(w, "Usage: stakegraph %s [flags] %s\n\n%s.\n\nFlags:\n", cmd.name, cmd.args, upperFirst(cmd.summary))
	noEnv := func(string) string { return "" }
	var opts options
	opts.fromEnv(noEnv)
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	cmd.flags(fs, &cli{getenv: noEnv, opts: opts})
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	printFlags(tw, "", fs)
	tw.Flush()
	fmt.Fprintf(w, "\nThe global flags (stakegraph help) are accepted too.\n")
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// printFlags writes one tab-separated row per flag of fs, in name order,
// with its default; the first row is labelled with label. The usage texts
// name the flags' environment variables.
func printFlags(tw io.Writer, label string, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) { // VisitAll visits in name order
		arg, usage := flag.UnquoteUsage(f)
		def := ""
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			def = fmt.Sprintf(" (default %q)", f.DefValue)
		}
		fmt.Fprintf(tw, "  %s\t--%s %s\t%s%s\n", label, f.Name, arg, usage, def)
		label = ""
	})
}
