package codec

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/mcpledger/mcpledger/ledger"
)

// RekeyReport counts what Rekey saw and did.
type RekeyReport struct {
	// Records is how many records were read.
	Records int
	// Rewritten is how many records were sealed again with the current key
	// (or for the first time, when they were plain).
	Rewritten int
	// Plain is how many of the payloads rewritten were stored in clear.
	Plain int
	// Current is how many payloads already had the current key.
	Current int
	// Skipped is how many records other writers kept changing while
	// Rekey ran, so they were not rewritten; running Rekey again
	// reaches them.
	Skipped int
}

// Rekey seals every record's arguments and result with c's current key:
// payloads sealed with an older key of c are opened and sealed again, plain
// ones are sealed for the first time. It first reads every record and
// opens every sealed payload; if any cannot be opened (a key missing from
// c, a wrong key) it returns that error and writes nothing. A record that
// a running process changes meanwhile is left as that process wrote it and
// tried again in a later pass (see RekeyReport.Skipped). Records, Plain and
// Current count the first rewrite pass.
func Rekey(ctx context.Context, st ledger.PayloadRewriter, c Codec) (RekeyReport, error) {
	if c == nil {
		return RekeyReport{}, errors.New("codec: rekey needs a codec with the key to seal with")
	}
	var rep RekeyReport
	// Pass one: every sealed payload opens, and nothing is written.
	check := func(id ledger.ID, args, result []byte) ([]byte, []byte, bool, error) {
		rep.Records++
		for _, f := range []struct {
			name string
			data []byte
		}{{FieldArguments, args}, {FieldResult, result}} {
			if _, _, err := reseal(ctx, c, id, f.name, f.data); err != nil {
				return nil, nil, false, err
			}
		}
		return nil, nil, false, nil
	}
	if _, err := st.RewritePayloads(ctx, check); err != nil {
		return rep, fmt.Errorf("%w; nothing was rewritten", err)
	}
	// Then rewrite. A record another writer changes between the read and
	// the write of a pass is skipped by the store; a few more passes reach
	// it, unless it keeps changing.
	for pass := 0; pass < rekeyPasses; pass++ {
		var pr RekeyReport
		wanted := 0
		rewrite := func(id ledger.ID, args, result []byte) ([]byte, []byte, bool, error) {
			pr.Records++
			newArgs, argsState, err := reseal(ctx, c, id, FieldArguments, args)
			if err != nil {
				return nil, nil, false, err
			}
			newResult, resultState, err := reseal(ctx, c, id, FieldResult, result)
			if err != nil {
				return nil, nil, false, err
			}
			changed := false
			for _, state := range []resealState{argsState, resultState} {
				switch state {
				case wasPlain:
					pr.Plain++
					changed = true
				case wasOld:
					changed = true
				case wasCurrent:
					pr.Current++
				}
			}
			if changed {
				wanted++
			}
			return newArgs, newResult, changed, nil
		}
		n, err := st.RewritePayloads(ctx, rewrite)
		rep.Rewritten += n
		if pass == 0 {
			rep.Records, rep.Plain, rep.Current = pr.Records, pr.Plain, pr.Current
		}
		rep.Skipped = max(wanted-n, 0)
		if err != nil || rep.Skipped == 0 {
			return rep, err
		}
	}
	return rep, nil
}

// rekeyPasses bounds the rewrite passes of Rekey.
const rekeyPasses = 3

type resealState int

const (
	wasEmpty   resealState = iota // no payload
	wasPlain                      // stored in clear
	wasOld                        // sealed with an older key
	wasCurrent                    // sealed with the current key
)

// reseal returns stored sealed with c's current key, and what it was.
func reseal(ctx context.Context, c Codec, id ledger.ID, field string, stored []byte) ([]byte, resealState, error) {
	if len(stored) == 0 {
		return stored, wasEmpty, nil
	}
	plain, state := stored, wasPlain
	old, sealed, err := SealedOf(stored)
	if err != nil {
		return nil, 0, fmt.Errorf("codec: rekey %s of %s key %s: %w", field, id.Tool, ledger.ShortHash(id.Key), err)
	}
	if sealed {
		if plain, err = c.Decode(ctx, id, field, old); err != nil {
			return nil, 0, fmt.Errorf("codec: rekey: cannot decrypt the %s of %s key %s: %w", field, id.Tool, ledger.ShortHash(id.Key), err)
		}
		state = wasOld
	}
	s, err := c.Encode(ctx, id, field, plain)
	if err != nil {
		return nil, 0, fmt.Errorf("codec: rekey: encrypting the %s of %s key %s: %w", field, id.Tool, ledger.ShortHash(id.Key), err)
	}
	if sealed && s.KeyID == old.KeyID && s.Alg == old.Alg {
		return stored, wasCurrent, nil
	}
	out, err := marshalSealed(s)
	if err != nil {
		return nil, 0, err
	}
	if bytes.Equal(out, stored) {
		return stored, wasCurrent, nil
	}
	return out, state, nil
}
