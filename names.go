package ringwal

import "github.com/ringwal/ringwal/internal/visible"

// The check that new queue and schedule names show as themselves. A name
// is shown by the console, `ringwal wal dump` and the CLI, and written to
// logs. A name may hold a character that shows as nothing (U+200B) or
// reverses the text after it (U+202E). It then reads as another name
// there, which an operator may act on. New names are refused such
// characters. Names already declared, by a log an older version wrote,
// stay usable. Replay does not call this check, and neither does a
// declaration or a schedule that names what exists. What prints names escapes such
// characters (internal/adminfmt), for those older names and for keys and
// headers, which are not refused.

// newName reports, as ErrInvalid, the first character of name (a queue's
// or schedule's, what says which) that does not show as itself
// (visible.Invisible), unless exists: a name already declared is not new.
func newName(what, name string, exists bool) error {
	if exists {
		return nil
	}
	for i, r := range name {
		if visible.Invisible(r) {
			return invalidf("%s %q holds %U at byte %d, a character that shows as nothing or changes how the text around it shows", what, name, r, i)
		}
	}
	return nil
}

// validNewQueueName is validQueueName for a name being declared: a name
// not declared yet must also be newName's.
func (e *Engine) validNewQueueName(name string) error {
	if err := validQueueName(name); err != nil {
		return err
	}
	_, exists := e.queues.byName.Load(name)
	return newName("queue name", name, exists)
}

// validScheduleName is validQueueName and newName for a schedule's name
// (a schedule of that name already there may be added again).
func (e *Engine) validScheduleName(name string) error {
	if err := validQueueName(name); err != nil {
		return err
	}
	return newName("name", name, e.scheds.lookup(name) != nil)
}
