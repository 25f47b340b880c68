package ingest

import (
	"context"
	"fmt"
)

// publishInBatches publishes the items of a photo or document run, batch
// at a time: load reads one item (its message to featurize and its
// original line, which a dead letter carries), publish featurizes and
// sends a batch. Rejected items are dead-lettered by publish and reported
// here on stderr, one line each and a count at the end; any other error
// stops the run. noun names an item in the progress bar and the report.
func publishInBatches[L, M any](ctx context.Context, s *Service, noun, path string, lines []L, batch int,
	load func(L) (M, []byte, error), publish func(context.Context, []M, [][]byte) ([]Rejection, error)) error {
	bar := newBar(s.env, s.cfg.Progress, len(lines), "publishing "+noun+"s of "+path)
	rejected := 0
	for i := 0; i < len(lines); i += batch {
		part := lines[i:min(i+batch, len(lines))]
		items := make([]M, len(part))
		orig := make([][]byte, len(part))
		for k, l := range part {
			var err error
			if items[k], orig[k], err = load(l); err != nil {
				return err
			}
		}
		rej, err := publish(ctx, items, orig)
		if err != nil {
			return err
		}
		for _, r := range rej {
			fmt.Fprintf(s.env.Stderr, "%s %s: %s: %s\n", noun, r.ID, r.Reason, r.Error)
		}
		rejected += len(rej)
		_ = bar.Set(i + len(part))
	}
	_ = bar.Finish()
	if rejected > 0 {
		fmt.Fprintf(s.env.Stderr, "%d of %d %ss dead-lettered\n", rejected, len(lines), noun)
	}
	return nil
}
