package indexer

import (
	"fmt"
	"net/netip"
	"syscall"
)

// specialPrefix is a range of the IANA IPv4 or IPv6 special-purpose address
// registries (or of the unicast space outside them) that the metadata
// fetcher must not connect to.
type specialPrefix struct {
	prefix netip.Prefix
	name   string
}

func special(prefix, name string) specialPrefix {
	return specialPrefix{netip.MustParsePrefix(prefix), name}
}

// nonPublicIPv4 lists the IPv4 ranges that are not globally routable
// unicast: the IANA IPv4 Special-Purpose Address Registry's entries that are
// not globally reachable, the deprecated 6to4 relay anycast block, multicast
// and the reserved class E space.
var nonPublicIPv4 = []specialPrefix{
	special("0.0.0.0/8", "this network"),
	special("10.0.0.0/8", "private use"),
	special("100.64.0.0/10", "shared address space (carrier-grade NAT)"),
	special("127.0.0.0/8", "loopback"),
	special("169.254.0.0/16", "link local"),
	special("172.16.0.0/12", "private use"),
	special("192.0.0.0/24", "IETF protocol assignments"),
	special("192.0.2.0/24", "documentation (TEST-NET-1)"),
	special("192.88.99.0/24", "6to4 relay anycast (deprecated)"),
	special("192.168.0.0/16", "private use"),
	special("198.18.0.0/15", "benchmarking"),
	special("198.51.100.0/24", "documentation (TEST-NET-2)"),
	special("203.0.113.0/24", "documentation (TEST-NET-3)"),
	special("224.0.0.0/4", "multicast"),
	special("240.0.0.0/4", "reserved"),
	special("255.255.255.255/32", "limited broadcast"),
}

// nonPublicIPv6 lists the IPv6 ranges that are not globally routable
// unicast: the IANA IPv6 Special-Purpose Address Registry's entries that are
// not globally reachable (or that tunnel to an IPv4 address the fetcher
// cannot vet), and the non-global parts of the address architecture.
// 64:ff9b::/96 is absent: a NAT64 address is judged by the IPv4 address it
// embeds. IPv4-mapped addresses (::ffff:0:0/96) are unmapped before the
// check and judged as IPv4.
var nonPublicIPv6 = []specialPrefix{
	special("::/128", "unspecified"),
	special("::1/128", "loopback"),
	special("::/96", "IPv4-compatible (deprecated)"),
	special("::ffff:0:0/96", "IPv4-mapped"),
	special("64:ff9b:1::/48", "local-use IPv4/IPv6 translation"),
	special("100::/64", "discard-only"),
	special("100:0:0:1::/64", "dummy prefix"),
	special("2001::/23", "IETF protocol assignments"),
	special("2001::/32", "Teredo"),
	special("2001:2::/48", "benchmarking"),
	special("2001:10::/28", "ORCHID (deprecated)"),
	special("2001:20::/28", "ORCHIDv2"),
	special("2001:30::/28", "drone remote ID"),
	special("2001:db8::/32", "documentation"),
	special("2002::/16", "6to4"),
	special("3fff::/20", "documentation"),
	special("5f00::/16", "segment routing SIDs"),
	special("fc00::/7", "unique local"),
	special("fe80::/10", "link local"),
	special("fec0::/10", "site local (deprecated)"),
	special("ff00::/8", "multicast"),
}

// nat64WellKnown is the NAT64 well-known prefix: 64:ff9b::a.b.c.d reaches
// a.b.c.d through the local network's translator.
var nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")

// ipv6GlobalUnicast is the part of the IPv6 space that IANA allocates as
// global unicast; everything outside it is reserved or special.
var ipv6GlobalUnicast = netip.MustParsePrefix("2000::/3")

// publicAddress reports whether a is a globally routable unicast address,
// the only kind the metadata fetcher connects to. Addresses that embed an
// IPv4 address (IPv4-mapped, NAT64) are judged by that address; scoped
// addresses (with a zone) never are public.
func publicAddress(a netip.Addr) bool {
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	a = a.Unmap()
	if a.Is6() && nat64WellKnown.Contains(a) {
		b := a.As16()
		return publicAddress(netip.AddrFrom4([4]byte(b[12:])))
	}
	if !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsUnspecified() || a.IsMulticast() ||
		a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() {
		return false
	}
	list := nonPublicIPv4
	if a.Is6() {
		if !ipv6GlobalUnicast.Contains(a) {
			return false
		}
		list = nonPublicIPv6
	}
	for _, p := range list {
		if p.prefix.Contains(a) {
			return false
		}
	}
	return true
}

// addressGuard returns a net.Dialer Control function that refuses to connect
// to an address that is not public. It runs after name resolution, on the
// address of every connection attempt (redirects included), before the
// connection is made. allow, when not nil, admits further addresses (tests
// use it to reach their own servers on loopback).
func addressGuard(allow func(netip.AddrPort) bool) func(network, address string, c syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w (%s: %v)", errPrivateAddress, address, err)
		}
		if allow != nil && allow(ap) {
			return nil
		}
		if !publicAddress(ap.Addr()) {
			return fmt.Errorf("%w (%s)", errPrivateAddress, ap.Addr())
		}
		return nil
	}
}
