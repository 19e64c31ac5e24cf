/**
 * A backend's position where a Read page ends, opaque to everything above the
 * store: the layers above pass it back untouched (the offset codec wraps it in
 * a versioned, authenticated envelope). Here, below query and store, so that
 * read plans name it without importing the storage contract.
 */
export type Cursor = Uint8Array;
/** A position in the change feed (how far a Tail has followed), opaque to everything above the store. */
export type ChangePosition = Uint8Array;
