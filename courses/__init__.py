"""A team's own course, written through the site (web process): its notes uploaded and previewed, its
drills written, checked in the sandbox and published, the whole course exported as a folder.

The app sits above ``cards``, ``graders`` and ``teams``: it decides who may write a team's course (its
owner and the editors the owner names) and calls their use cases; nothing below imports it.
"""
