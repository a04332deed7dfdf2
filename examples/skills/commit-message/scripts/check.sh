#!/bin/sh
# Usage: check.sh "subject line" — fails when the subject is too long or ends with a period.
subject="$1"
if [ "${#subject}" -gt 72 ]; then echo "subject is ${#subject} characters; keep it to 72"; exit 1; fi
case "$subject" in *.) echo "drop the period at the end of the subject"; exit 1;; esac
echo "ok"
