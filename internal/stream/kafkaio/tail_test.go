package kafkaio

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/mimlstream/mimlstream/internal/stream/wire"
)

func TestTransient(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"not coordinator", kafka.NotCoordinatorForGroup, true},
		{"leader not available", fmt.Errorf("fetch: %w", kafka.LeaderNotAvailable), true},
		{"connection refused", &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, true},
		{"eof", fmt.Errorf("read: %w", io.EOF), true},
		{"sasl failed", kafka.SASLAuthenticationFailed, false},
		{"topic authorization", kafka.TopicAuthorizationFailed, false},
		{"other", errors.New("x509: certificate signed by unknown authority"), false},
	}
	for _, c := range cases {
		if got := Transient(c.err); got != c.want {
			t.Errorf("%s: Transient = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestConsumerRefused(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("join: %w", kafka.InvalidSessionTimeout), true},
		{kafka.GroupAuthorizationFailed, true},
		{kafka.UnsupportedVersion, true},
		{kafka.NotCoordinatorForGroup, false},
		{kafka.RebalanceInProgress, false},
		{kafka.UnknownMemberId, false},
		{io.EOF, false},
	}
	for _, c := range cases {
		if got := ConsumerRefused(c.err); got != c.want {
			t.Errorf("ConsumerRefused(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestRefusedReason(t *testing.T) {
	cases := []struct {
		err  error
		want wire.Reason
	}{
		{kafka.MessageSizeTooLarge, wire.ReasonOversize},
		{fmt.Errorf("write: %w", &TooLargeError{Size: 2, Limit: 1}), wire.ReasonOversize},
		{kafka.InvalidRecord, wire.ReasonProduceRefused},
		{kafka.TopicAuthorizationFailed, wire.ReasonProduceRefused},
	}
	for _, c := range cases {
		if got := (Refused{Err: c.err}).Reason(); got != c.want {
			t.Errorf("Refused{%v}.Reason() = %s, want %s", c.err, got, c.want)
		}
	}
}
