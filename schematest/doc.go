// Package schematest checks switchboard's JSON Schema (config.JSONSchema)
// with an independent JSON Schema validator against the module's testdata:
// every valid file is accepted and every invalid file whose error one file
// can show on its own is rejected. It also checks that the recorded outputs
// of 'switchboard validate --json' match the schema the command prints
// with --json-schema. It is a nested module so that the
// validator never enters the main module's dependencies; run it with
//
//	cd schematest && go test ./...
package schematest
