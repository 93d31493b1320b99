package sandbox

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds on caller-chosen metadata (and template labels), so one record
// cannot grow without limit.
const (
	MaxMetadataPairs = 32
	MaxMetadataBytes = 256
)

// Bounds of the kernel's, checked before a request reaches the sandbox so
// that the answer names what is too long instead of passing on
// ENAMETOOLONG or E2BIG.
const (
	// MaxPath is PATH_MAX less the terminating NUL.
	MaxPath = 4095
	// MaxName is NAME_MAX: one component of a path.
	MaxName = 255
	// MaxEnvName bounds an environment variable's name.
	MaxEnvName = 128
	// maxEnvString is MAX_ARG_STRLEN less the NUL: the kernel's bound on
	// one "NAME=value" string.
	maxEnvString = 128<<10 - 1
)

// CheckPathLength refuses a path the kernel would refuse as too long,
// naming the part that is.
func CheckPathLength(p string) error {
	if len(p) > MaxPath {
		return fmt.Errorf("%w: path %s is %d bytes; at most %d", ErrInvalid, clip(p), len(p), MaxPath)
	}
	for _, name := range strings.Split(p, "/") {
		if len(name) > MaxName {
			return fmt.Errorf("%w: path %s: the name %s is %d bytes; a file name is at most %d", ErrInvalid, clip(p), clip(name), len(name), MaxName)
		}
	}
	return nil
}

// ValidEnv refuses environment variables a shell could not set or read:
// names are shell names ([A-Za-z_][A-Za-z0-9_]*, at most MaxEnvName
// bytes), values hold no NUL (which would cut them short) and each
// NAME=value fits the kernel's bound on one string. The error names the
// first bad variable in name order.
func ValidEnv(env map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v := env[k]
		switch {
		case !shellName(k):
			return fmt.Errorf("%w: environment variable %s: a name is a shell name ([A-Za-z_][A-Za-z0-9_]*, 1 to %d bytes)", ErrInvalid, clip(k), MaxEnvName)
		case strings.IndexByte(v, 0) >= 0:
			return fmt.Errorf("%w: environment variable %s: the value holds a NUL byte", ErrInvalid, k)
		case len(k)+1+len(v) > maxEnvString:
			return fmt.Errorf("%w: environment variable %s: NAME=value is %d bytes; at most %d", ErrInvalid, k, len(k)+1+len(v), maxEnvString)
		}
	}
	return nil
}

func shellName(s string) bool {
	if s == "" || len(s) > MaxEnvName || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// validMetadata bounds metadata and keeps it printable: keys and values
// show in the console, the CLI and logs, where a control character or an
// invisible one (a bidi override, as in the "Trojan Source" attack) could
// make one sandbox's labels pass for another's. The error names the key.
func validMetadata(md map[string]string) error {
	if len(md) > MaxMetadataPairs {
		return fmt.Errorf("%w: %d metadata pairs, at most %d", ErrInvalid, len(md), MaxMetadataPairs)
	}
	for _, k := range slices.Sorted(maps.Keys(md)) {
		v := md[k]
		switch {
		case k == "" || len(k) > MaxMetadataBytes:
			return fmt.Errorf("%w: metadata key %s: keys are 1 to %d bytes", ErrInvalid, clip(k), MaxMetadataBytes)
		case !printable(k):
			return fmt.Errorf("%w: metadata key %s: keys are printable UTF-8, without control or invisible characters", ErrInvalid, clip(k))
		case len(v) > MaxMetadataBytes:
			return fmt.Errorf("%w: metadata %s: the value is %d bytes; at most %d", ErrInvalid, clip(k), len(v), MaxMetadataBytes)
		case !printable(v):
			return fmt.Errorf("%w: metadata %s: the value is not printable UTF-8 (it holds a control or invisible character)", ErrInvalid, clip(k))
		}
	}
	return nil
}

// printable says whether s is valid UTF-8 of printable characters and
// spaces only.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// clip quotes s for a message, cut to its first 40 bytes: an over-long
// input must not make the message as long.
func clip(s string) string {
	if len(s) <= 40 {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q...", strings.ToValidUTF8(s[:40], ""))
}
