package factory

import "time"

// MaxReloadRecords is how many reload attempts Status.Reloads keeps: the
// most recent ones.
const MaxReloadRecords = 20

// ReloadRecord is one reload attempt as Status.Reloads shows it: the
// first load (by Open or New), and every Apply or reload after it that was
// applied or rejected (one whose inputs were unchanged is no attempt to
// change anything and is not recorded, as OnReload is not told). It holds
// no secret: Err is redacted as Status.LastError is. A plain value.
type ReloadRecord struct {
	// Time is when the attempt ended.
	Time time.Time
	// Generation is the generation serving after it: the new one when
	// applied, the old one when rejected.
	Generation uint64
	// Err is why it was rejected (redacted); nil when it was applied.
	Err error
	// Changed lists the clients whose pipeline it rebuilt, sorted: every
	// client for the first load; nil when rejected.
	Changed []string
}

// reloadRing keeps the last MaxReloadRecords records, oldest overwritten
// first. The zero value is empty. It is not safe for concurrent use: the
// registry guards it with its mu.
type reloadRing struct {
	recs [MaxReloadRecords]ReloadRecord
	next int // where the next record goes
	n    int // records held
}

// add records rec.
func (q *reloadRing) add(rec ReloadRecord) {
	q.recs[q.next] = rec
	q.next = (q.next + 1) % MaxReloadRecords
	q.n = min(q.n+1, MaxReloadRecords)
}

// list returns the records, newest first, in a slice of the caller's; nil
// when there are none.
func (q *reloadRing) list() []ReloadRecord {
	if q.n == 0 {
		return nil
	}
	out := make([]ReloadRecord, q.n)
	for i := range out {
		out[i] = q.recs[(q.next-1-i+MaxReloadRecords)%MaxReloadRecords]
	}
	return out
}

// changedClients returns the names of the clients plans rebuilt, in
// plans' order (sorted by name).
func changedClients(plans []ClientPlan) []string {
	var changed []string
	for _, p := range plans {
		if p.Action != ActionUnchanged {
			changed = append(changed, p.Name)
		}
	}
	return changed
}
