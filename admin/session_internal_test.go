package admin

import (
	"testing"
	"time"
)

// TestRevocationsBounded: the revoked sessions are forgotten once they
// expire, and should more than maxRevoked be live at once, every session
// issued so far is revoked instead of the list growing.
func TestRevocationsBounded(t *testing.T) {
	var v revocations
	now := time.Unix(1_700_000_000, 0)
	issued := now.Add(-time.Hour)
	for i := range maxRevoked {
		v.revoke(string(rune('a'+i%26))+time.Duration(i).String(), now.Add(time.Duration(i+1)*time.Second), now)
	}
	if len(v.nonces) != maxRevoked {
		t.Fatalf("%d revoked, want %d", len(v.nonces), maxRevoked)
	}
	if v.revoked("live", issued) {
		t.Fatal("a session never signed out is revoked")
	}
	// Half of them expire: the next revocation makes room by dropping them.
	later := now.Add(maxRevoked / 2 * time.Second)
	v.revoke("next", later.Add(time.Hour), later)
	if n := len(v.nonces); n > maxRevoked/2+2 {
		t.Fatalf("%d revoked after the expired ones went, want about %d", n, maxRevoked/2)
	}
	if !v.revoked("next", issued) {
		t.Fatal("the new revocation is not kept")
	}
	// Full of live ones: everything issued so far is revoked instead.
	for i := 0; len(v.nonces) < maxRevoked; i++ {
		v.revoke("live"+time.Duration(i).String(), later.Add(time.Hour), later)
	}
	v.revoke("overflow", later.Add(time.Hour), later)
	if len(v.nonces) != 0 {
		t.Fatalf("%d kept, want the list cleared", len(v.nonces))
	}
	if !v.revoked("live", later) || !v.revoked("other", issued) {
		t.Fatal("sessions issued before the overflow are still valid")
	}
	if v.revoked("fresh", later.Add(2*time.Second)) {
		t.Fatal("a session issued after the overflow is revoked")
	}
}
