package annotate

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultProbeInterval is the period of the input probe (AnnotatorConfig.ProbeInterval).
const DefaultProbeInterval = 2 * time.Second

// sourceState is the verdict of the last input probe: err is nil while the
// brokers list the input topic with a leader for every partition; since is
// when the current verdict began.
type sourceState struct {
	err   error
	since time.Time
}

// errTopicMissing: the brokers do not know the input topic.
var errTopicMissing = errors.New("topic does not exist")

// probeSource asks the brokers, one after the other until one answers,
// where the input topic's partitions are: what the consumer needs before
// it can fetch anything. The consumer's own errors are retried inside the
// Kafka client, out of sight; the probe makes them a readiness verdict.
func (a *Annotator) probeSource(ctx context.Context) error {
	topic := a.cfg.Topics.Annotate
	var errs []error
	for _, b := range a.cfg.Brokers {
		err := func() error {
			dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			conn, err := a.cfg.Security.Dialer().DialContext(dctx, "tcp", b)
			if err != nil {
				return err
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			parts, err := conn.ReadPartitions(topic)
			if err != nil {
				return err
			}
			if len(parts) == 0 {
				return errTopicMissing
			}
			for _, p := range parts {
				if p.Leader.Host == "" || p.Leader.ID < 0 {
					return fmt.Errorf("partition %d has no leader", p.ID)
				}
			}
			return nil
		}()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", b, err))
	}
	return errors.Join(errs...)
}

// watchSource probes the input every ProbeInterval until ctx ends, keeps
// the verdict for readiness, and logs its changes.
func (a *Annotator) watchSource(ctx context.Context) {
	log := a.cfg.Obs.Logger.With("annotator", a.cfg.Name, "topic", a.cfg.Topics.Annotate)
	t := time.NewTicker(a.cfg.ProbeInterval)
	defer t.Stop()
	for {
		err := a.probeSource(ctx)
		if ctx.Err() != nil {
			return
		}
		prev := a.source.Load()
		switch {
		case err != nil && (prev == nil || prev.err == nil):
			a.source.Store(&sourceState{err: err, since: time.Now()})
			log.Error("cannot read the input topic; not ready", "err", err)
		case err != nil:
			a.source.Store(&sourceState{err: err, since: prev.since})
		case prev != nil && prev.err != nil:
			a.source.Store(&sourceState{since: time.Now()})
			log.Info("input topic readable again", "after", time.Since(prev.since).Round(time.Second))
		case prev == nil:
			a.source.Store(&sourceState{since: time.Now()})
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sourceProblem is the readiness line of a failing input probe, "" when
// the input is readable (or not probed yet).
func (a *Annotator) sourceProblem() string {
	s := a.source.Load()
	if s == nil || s.err == nil {
		return ""
	}
	return fmt.Sprintf("not ready: cannot read the input topic %s for %v: %v", a.cfg.Topics.Annotate, time.Since(s.since).Round(time.Second), s.err)
}
