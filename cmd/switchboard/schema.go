package main

import (
	"io"

	"github.com/spf13/pflag"

	"github.com/switchboard-http/switchboard/config"
)

const schemaAbout = `Print the JSON Schema (draft 2020-12) of the file format, generated from the Go types:
every key with its type, default, allowed values and description. Save it next to your
files and point your editor's YAML language server at it for completion and checks:

  switchboard schema > clients.schema.json
  # first line of clients.yaml:
  # yaml-language-server: $schema=./clients.schema.json

The schema sees one file's keys, types and ranges; 'switchboard validate' also checks
what spans keys (attempt_timeout < timeout, auth.host with a credential), env vars,
flags and referenced files.
`

func runSchema(args, _ []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("schema", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	markdown := fs.Bool("markdown", false, "print the key reference as a Markdown table instead (docs/reference.md's)")
	section := fs.String("section", "", "the schema of an application's file keeping the client config under this key path, e.g. http_clients (as Options.Section)")
	fs.Usage = usageFunc(fs, "schema [--markdown] [--section PATH]", schemaAbout)
	if _, code, stop := parse(fs, args, 0, 0, stdout, stderr); stop {
		return code
	}
	if *markdown {
		io.WriteString(stdout, config.Reference())
		return exitOK
	}
	stdout.Write(config.JSONSchemaSection(*section))
	return exitOK
}
