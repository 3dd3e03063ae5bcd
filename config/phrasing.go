package config

import "fmt"

// The phrasing of a value of the wrong kind is one for every layer: the
// file, a Source, an env variable and a flag all report a bad value for
// key kind k as mustBe(k, got), so the same mistake reads the same
// wherever it was made ("must be an integer, got "three"").

// wants maps each leaf kind to what its values must be.
var wants = map[kind]string{
	kindDuration:   "a duration string like \"500ms\"",
	kindInt:        "an integer",
	kindFloat:      "a number",
	kindBool:       "true or false",
	kindString:     "a string",
	kindIntList:    "a list of integers",
	kindStringList: "a list of strings",
}

// mustBe returns the message for a value of kind k that is not one: got
// is the value as the error may show it (quoted text, "a map",
// "<redacted>" for a secret).
func mustBe(k kind, got string) string {
	return "must be " + wants[k] + ", got " + got
}

// itemMustBe returns the message for the i-th (0-based) item of a list
// whose items must be of kind k.
func itemMustBe(i int, k kind, got string) string {
	return fmt.Sprintf("item %d %s", i+1, mustBe(k, got))
}
