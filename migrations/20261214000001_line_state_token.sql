-- A line's state token (issue 70): a fresh random value each time a push changes the spans its
-- latest scan has or its open tracked findings, NULL after any other writer changes them. A
-- PostgreSQL replica keeps the state it last wrote or read under the token, and a push whose
-- token still matches skips reading the state again (store/src/pushes/line_state.rs).
ALTER TABLE branches ADD COLUMN live_token TEXT;
