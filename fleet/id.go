package fleet

import (
	"strconv"
	"strings"

	"github.com/ringwal/ringwal"
)

// ID names a message in the fleet: its shard and its ID in that shard's
// engine. Its text form is "shard/id", both decimal.
type ID struct {
	Shard int
	ID    ringwal.ID
}

// String returns "shard/id", which ParseID reads back.
func (id ID) String() string {
	return strconv.Itoa(id.Shard) + "/" + strconv.FormatUint(uint64(id.ID), 10)
}

// MarshalText is String, so that an ID is a JSON string.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText is ParseID.
func (id *ID) UnmarshalText(b []byte) error {
	p, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = p
	return nil
}

// ParseID reads "shard/id" as String writes it: two decimal numbers
// without sign or leading zeros, the shard below 1000. Anything else is
// an error wrapping ErrInvalid. (It does not know the fleet's shard
// count: a member refuses a shard beyond it when the ID is used.)
func ParseID(s string) (ID, error) {
	sh, id, ok := strings.Cut(s, "/")
	if !ok {
		return ID{}, invalidf("ID %q is not shard/id", s)
	}
	n, err := canonicalUint(sh, 10)
	if err != nil || n >= maxShards {
		return ID{}, invalidf("ID %q: shard %q is not a number below %d", s, sh, maxShards)
	}
	v, err := canonicalUint(id, 64)
	if err != nil {
		return ID{}, invalidf("ID %q: %q is not a message ID", s, id)
	}
	return ID{Shard: int(n), ID: ringwal.ID(v)}, nil
}

// canonicalUint parses decimal digits only, refusing leading zeros, so
// that every accepted text is the one String writes.
func canonicalUint(s string, bits int) (uint64, error) {
	if s == "" || (len(s) > 1 && s[0] == '0') || strings.TrimLeft(s, "0123456789") != "" {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseUint(s, 10, bits)
}
