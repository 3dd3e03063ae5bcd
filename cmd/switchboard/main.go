// Command switchboard is the ops tool of the switchboard library: it checks
// a clients.yaml before it ships, explains where each effective setting of a
// client came from, shows what a reload from one file to another would do,
// and prints the JSON Schema that editors use for completion.
//
//	go install github.com/switchboard-http/switchboard/cmd/switchboard@latest
//	switchboard validate clients.yaml
//	switchboard explain clients.yaml billing
//	switchboard diff old.yaml new.yaml
//	switchboard schema > clients.schema.json
//
// Exit codes: 0 ok, 1 invalid configuration, 2 usage error.
package main

import (
	"fmt"
	"io"
	"os"
)

// The exit codes.
const (
	exitOK      = 0
	exitInvalid = 1
	exitUsage   = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

const usage = `switchboard checks, explains and compares switchboard client configuration files.

Usage:
  switchboard <command> [flags] [arguments]

Commands:
  validate FILE          check FILE as the service would load it; every error with its
                         key path, line and, for typos, the nearest valid key
  explain FILE [CLIENT]  show each client's effective settings and where each came from
                         (built-in, file:line, env var, flag); secrets redacted
  diff OLD NEW           show what a reload from OLD to NEW would do to each client
  schema                 print the JSON Schema (draft 2020-12) of the file format

validate, explain and diff take --env-prefix and --set to add the env and flag layers,
and --json for machine-readable output. Run 'switchboard <command> --help' for details.

Exit codes: 0 ok, 1 invalid configuration, 2 usage error.
`

// command is one subcommand: run gets the arguments after its name.
type command func(args, env []string, stdout, stderr io.Writer) int

var commands = map[string]command{
	"validate": runValidate,
	"explain":  runExplain,
	"diff":     runDiff,
	"schema":   runSchema,
}

// run is the whole program: main only supplies the process's arguments,
// environment and streams, so tests run it in-process.
func run(args, env []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "switchboard: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	return cmd(args[1:], env, stdout, stderr)
}
