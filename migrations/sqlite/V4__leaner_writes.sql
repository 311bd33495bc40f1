-- V4: fewer pages written per change.
--
-- postures_by_epoch (V2) indexed postures by epoch for the count and the carry-over when an
-- epoch starts. Nearly every posture row belongs to the current epoch, so those statements read
-- the whole table through the index anyway, while every grant, inherited posture and
-- revocation paid for one more B-tree page in its commit (and a cascade deleted one index entry
-- per session). Starting an epoch now scans postures directly.
DROP INDEX postures_by_epoch;
