# Varnish with vmod_vsthrottle (Debian: apt-get install varnish
# varnish-modules), keyed on the X-Key header: 10 requests per 2 s. The
# module keeps a bucket of 10 given 5 a second, the tokens earned since the
# last admit rounded down and that clock reset at every admit (its
# calc_tokens): partial tokens are lost, so it admits at most what a bucket
# of 10 at 5 a second would, sometimes less. No backend: the answer is
# Varnish's own. The port is varnishd's -a (tests/it/real_limiters.rs).
vcl 4.1;
import vsthrottle;
backend default none;

sub vcl_recv {
    if (vsthrottle.is_denied(req.http.X-Key, 10, 2s, 0s)) {
        return (synth(429, "Too Many Requests"));
    }
    return (synth(200, "OK"));
}
