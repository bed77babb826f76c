"""The Batches pages: batches newest first, one batch's members and its callbacks."""
