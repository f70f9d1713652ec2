#!/usr/bin/perl
# Writes a small MaxMind DB file for the enrichment tests (crates/enrich/tests/enrich), with
# Debian's libmaxmind-db-writer-perl: `perl write-mmdb.pl SPEC.json OUT.mmdb`.
#
# SPEC.json: {"database_type": "GeoLite2-ASN", "ip_version": 6, "record_size": 24,
#             "types": {"autonomous_system_number": "uint32", ...},
#             "networks": [["8.8.8.0/24", {"autonomous_system_number": 15169, ...}], ...]}
# `types` gives the MaxMind DB type of every map key at any depth (the writer asks by key
# name); an array type is written ["array", "map"].
use strict;
use warnings;
use JSON::PP;
use MaxMind::DB::Writer::Tree;

my ($spec_path, $out_path) = @ARGV;
die "usage: write-mmdb.pl SPEC.json OUT.mmdb\n" unless defined $out_path;

open my $in, '<:raw', $spec_path or die "cannot read $spec_path: $!\n";
my $spec = JSON::PP->new->utf8->decode(do { local $/; <$in> });
close $in;

my %types = %{ $spec->{types} };
my $tree = MaxMind::DB::Writer::Tree->new(
    ip_version               => $spec->{ip_version},
    record_size              => $spec->{record_size} // 24,
    database_type            => $spec->{database_type},
    languages                => ['en'],
    description              => { en => 'Periscope enrichment test data' },
    remove_reserved_networks => 0,
    map_key_type_callback    => sub {
        my $type = $types{ $_[0] };
        die "write-mmdb.pl: no type for key '$_[0]'\n" unless defined $type;
        return $type;
    },
);
for my $entry (@{ $spec->{networks} }) {
    my ($network, $data) = @$entry;
    $tree->insert_network($network, $data);
}
open my $out, '>:raw', $out_path or die "cannot write $out_path: $!\n";
$tree->write_tree($out);
close $out or die "cannot write $out_path: $!\n";
