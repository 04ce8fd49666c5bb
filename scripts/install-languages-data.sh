#!/usr/bin/env bash
# Installs the data of `npm run bench:languages`: Debian's Debian Reference in Simplified Chinese, in
# Japanese and in its English original (packages debian-reference-zh-cn, -ja and -en), whose HTML lands
# in /usr/share/debian-reference/, and iso-codes, whose translated names of places and currencies
# (/usr/share/locale/*/LC_MESSAGES/iso_*.mo) are the bench's off-topic queries. Safe to re-run: it
# exits at once when all are installed.
set -euo pipefail

PACKAGES=(debian-reference-zh-cn debian-reference-ja debian-reference-en iso-codes)

missing=()
for package in "${PACKAGES[@]}"; do
  if [ "$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null)" != "install ok installed" ]; then
    missing+=("$package")
  fi
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "${PACKAGES[*]} already installed"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
# Documentation only: no recommended packages (a browser to read it with, say).
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "installed ${missing[*]}"
