"""RFC 5005 backfill: walk a feed's archive (prev-archive) or paged (next/previous) documents once.

links.py chooses where to start and which relation to follow (pure); walk.py is the job and the walk
itself (one page per transaction, so it resumes where it stopped); hook.py queues a walk from a poll.
"""
