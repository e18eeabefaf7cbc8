/*  cl_addr_test.c - selftest of cl_addr: good and bad multiaddrs, lists,
    round trips through format and parse, ZeroMQ endpoints. */
#include "util/cl_addr.h"
#include "util/cl_identity.h"
#include "util/cl_selftest.h"

#include <stdlib.h>

static char s_id[CL_PEER_ID_MAX];      /* a valid peer id */
static uint8_t s_key[32];              /* the key behind s_id */
static char s_zero_id[CL_PEER_ID_MAX]; /* id of the all-zero key: 32 '1's */

static void test_good(void)
{
    char err[256], text[CL_ADDR_TEXT_MAX + 64];
    cl_addr_t a;

    CL_CHECK(cl_addr_parse("/ip4/203.0.113.7/tcp/31337", &a, err, sizeof err) == 0);
    CL_CHECK(a.family == CL_ADDR_IP4 && a.port == 31337 && !a.has_key);
    CL_CHECK_STREQ(a.host, "203.0.113.7");

    snprintf(text, sizeof text, "/ip4/127.0.0.1/tcp/0/p2p/%s", s_id);
    CL_CHECK(cl_addr_parse(text, &a, err, sizeof err) == 0);
    CL_CHECK(a.has_key && memcmp(a.key, s_key, 32) == 0 && a.port == 0);

    CL_CHECK(cl_addr_parse("/ip4/0.0.0.0/tcp/65535", &a, err, sizeof err) == 0);
    CL_CHECK(a.port == 65535);
    CL_CHECK(cl_addr_parse("/ip4/255.255.255.255/tcp/1", &a, err, sizeof err) == 0);

    /* IPv6 is stored canonically. */
    CL_CHECK(cl_addr_parse("/ip6/0:0:0:0:0:0:0:1/tcp/9", &a, err, sizeof err) == 0);
    CL_CHECK(a.family == CL_ADDR_IP6);
    CL_CHECK_STREQ(a.host, "::1");
    CL_CHECK(cl_addr_parse("/ip6/2001:DB8::A/tcp/9", &a, err, sizeof err) == 0);
    CL_CHECK_STREQ(a.host, "2001:db8::a");
    CL_CHECK(cl_addr_parse("/ip6/::ffff:192.0.2.1/tcp/9", &a, err, sizeof err) == 0);

    CL_CHECK(cl_addr_parse("/dns/host.example/tcp/31337", &a, err, sizeof err) == 0);
    CL_CHECK(a.family == CL_ADDR_DNS && a.dns_version == 0);
    CL_CHECK(cl_addr_parse("/dns4/a-b.c0/tcp/1", &a, err, sizeof err) == 0);
    CL_CHECK(a.family == CL_ADDR_DNS && a.dns_version == 4);
    CL_CHECK(cl_addr_parse("/dns6/localhost/tcp/1", &a, err, sizeof err) == 0);
    CL_CHECK(a.family == CL_ADDR_DNS && a.dns_version == 6);
    CL_CHECK(cl_addr_parse("/dns/1st.example/tcp/1", &a, err, sizeof err) == 0);
    /* 63-character label, 253-character name. */
    char name[300];
    memset(name, 'a', 63);
    name[63] = '\0';
    snprintf(text, sizeof text, "/dns/%s/tcp/1", name);
    CL_CHECK(cl_addr_parse(text, &a, err, sizeof err) == 0);
    /* Labels of 63, 63, 63 and 61 characters with three dots: 253. */
    memset(name, 'a', 253);
    name[63] = name[127] = name[191] = '.';
    name[253] = '\0';
    snprintf(text, sizeof text, "/dns/%s/tcp/1", name);
    CL_CHECK(cl_addr_parse(text, &a, err, sizeof err) == 0);
    strcat(name, "a");
    snprintf(text, sizeof text, "/dns/%s/tcp/1", name);
    CL_CHECK(cl_addr_parse(text, &a, err, sizeof err) != 0);

    /* The all-zero key: leading '1's are leading zero bytes. */
    snprintf(text, sizeof text, "/ip4/10.0.0.1/tcp/5/p2p/%s", s_zero_id);
    CL_CHECK(cl_addr_parse(text, &a, err, sizeof err) == 0);
    uint8_t zero[32] = {0};
    CL_CHECK(a.has_key && memcmp(a.key, zero, 32) == 0);

    /* err may be NULL. */
    CL_CHECK(cl_addr_parse("/ip4/1.2.3.4/tcp/5", &a, NULL, 0) == 0);
    CL_CHECK(cl_addr_parse("/ip4/1.2.3/tcp/5", &a, NULL, 0) == -1);
}

/* Each bad address must fail, leave *out untouched and say why. */
static void test_bad(void)
{
    char longname[CL_ADDR_TEXT_MAX + 100];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    longname[0] = '/';
    char bad_id[CL_ADDR_TEXT_MAX];
    snprintf(bad_id, sizeof bad_id, "/ip4/1.2.3.4/tcp/5/p2p/%s", s_id);
    bad_id[strlen(bad_id) - 1] = '\0'; /* one digit short */
    char long_id[CL_ADDR_TEXT_MAX];
    snprintf(long_id, sizeof long_id, "/ip4/1.2.3.4/tcp/5/p2p/%s1", s_id);
    char zero_bad[CL_ADDR_TEXT_MAX];
    snprintf(zero_bad, sizeof zero_bad, "/ip4/1.2.3.4/tcp/5/p2p/%s", s_zero_id + 1);
    char bad_char[CL_ADDR_TEXT_MAX];
    snprintf(bad_char, sizeof bad_char, "/ip4/1.2.3.4/tcp/5/p2p/%s", s_id);
    bad_char[strlen(bad_char) - 3] = '0'; /* '0' is not base58 */
    char extra[CL_ADDR_TEXT_MAX];
    snprintf(extra, sizeof extra, "/ip4/1.2.3.4/tcp/5/p2p/%s/tcp/6", s_id);
    char trailing[CL_ADDR_TEXT_MAX];
    snprintf(trailing, sizeof trailing, "/ip4/1.2.3.4/tcp/5/p2p/%s/", s_id);

    const struct {
        const char *text;
        const char *why; /* part of the expected message */
    } cases[] = {
        {"", "empty"},
        {"ip4/1.2.3.4/tcp/5", "does not start with '/'"},
        {"/", "empty part"},
        {"//ip4/1.2.3.4/tcp/5", "empty part"},
        {"/ip4/1.2.3.4/tcp/5/", "empty part"},
        {"/ip4//tcp/5", "empty part"},
        {"/ip4/1.2.3.4", "/tcp/<port>"},
        {"/ip4/1.2.3.4/udp/5", "/tcp/<port>"},
        {"/ip4/1.2.3.4/tcp", "no value"},
        {"/ip4/1.2.3/tcp/5", "not an IPv4"},
        {"/ip4/1.2.3.4.5/tcp/5", "not an IPv4"},
        {"/ip4/1.2.3.256/tcp/5", "not an IPv4"},
        {"/ip4/01.2.3.4/tcp/5", "not an IPv4"},
        {"/ip4/1..3.4/tcp/5", "not an IPv4"},
        {"/ip4/1.2.3.4./tcp/5", "not an IPv4"},
        {"/ip4/.1.2.3/tcp/5", "not an IPv4"},
        {"/ip4/1.2.3.-4/tcp/5", "not an IPv4"},
        {"/ip4/ 1.2.3.4/tcp/5", "not an IPv4"},
        {"/ip4/1.2.3.4 /tcp/5", "not an IPv4"},
        {"/ip4/0x1.2.3.4/tcp/5", "not an IPv4"},
        {"/ip4/1234.2.3.4/tcp/5", "not an IPv4"},
        {"/ip4/host.example/tcp/5", "not an IPv4"},
        {"/ip6/1.2.3.4/tcp/5", "not an IPv6"},
        {"/ip6/::1%lo/tcp/5", "not an IPv6"},
        {"/ip6/[::1]/tcp/5", "not an IPv6"},
        {"/ip6/1:2:3:4:5:6:7:8:9/tcp/5", "not an IPv6"},
        {"/ip6/:::/tcp/5", "not an IPv6"},
        {"/dns/-a.example/tcp/5", "not a host name"},
        {"/dns/a-.example/tcp/5", "not a host name"},
        {"/dns/a..example/tcp/5", "not a host name"},
        {"/dns/a.example./tcp/5", "not a host name"},
        {"/dns/.a.example/tcp/5", "not a host name"},
        {"/dns/a_b.example/tcp/5", "not a host name"},
        {"/dns/a b/tcp/5", "not a host name"},
        {"/dns/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/tcp/5",
         "not a host name"}, /* 64-character label */
        {"/dns/caf\xc3\xa9.example/tcp/5", "not a host name"},
        {"/dns7/a.example/tcp/5", "unknown protocol"},
        {"/IP4/1.2.3.4/tcp/5", "unknown protocol"},
        {"/unix/tmp/tcp/5", "unknown protocol"},
        {"/ip4/1.2.3.4/tcp/65536", "not a port"},
        {"/ip4/1.2.3.4/tcp/99999999999999999999", "not a port"},
        {"/ip4/1.2.3.4/tcp/-1", "not a port"},
        {"/ip4/1.2.3.4/tcp/+5", "not a port"},
        {"/ip4/1.2.3.4/tcp/05", "not a port"},
        {"/ip4/1.2.3.4/tcp/5x", "not a port"},
        {"/ip4/1.2.3.4/tcp/ 5", "not a port"},
        {"/ip4/1.2.3.4/tcp/5/p2p", "no value"},
        {"/ip4/1.2.3.4/tcp/5/ipfs/abc", "expected /p2p/"},
        {bad_id, "not a peer id"},
        {long_id, "not a peer id"},
        {zero_bad, "not a peer id"},
        {bad_char, "not a peer id"},
        {"/ip4/1.2.3.4/tcp/5/p2p/QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N",
         "not a peer id"}, /* a 34-byte multihash, not a 32-byte key */
        {extra, "unexpected"},
        {trailing, "empty part"},
        {"/ip4/1.2.3.4/tcp/5/p2p/a/b/c/d/e/f", "too many parts"},
        {longname, "longer than"},
        {"/ip4/1.2.3.4\n/tcp/5", "not an IPv4"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cl_addr_t a;
        memset(&a, 0x5a, sizeof a);
        char err[512] = "";
        int rc = cl_addr_parse(cases[i].text, &a, err, sizeof err);
        CL_CHECK(rc == -1);
        if (rc != -1)
            fprintf(stderr, "  accepted bad address %zu: %s\n", i, cases[i].text);
        CL_CHECK_CONTAINS(err, cases[i].why);
        CL_CHECK(strchr(err, '\n') == NULL); /* one line, even with a newline inside */
        CL_CHECK(a.port == 0x5a5a);          /* output untouched */
    }
    cl_addr_t a;
    CL_CHECK(cl_addr_parse(NULL, &a, NULL, 0) == -1);
    CL_CHECK(cl_addr_parse("/ip4/1.2.3.4/tcp/5", NULL, NULL, 0) == -1);
}

static void test_round_trip(void)
{
    char text[CL_ADDR_TEXT_MAX], out[CL_ADDR_TEXT_MAX], err[256];
    const char *hosts[] = {"/ip4/127.0.0.1",          "/ip6/::1", "/ip6/2001:db8::5:6",
                           "/dns/peer-7.example.org", "/dns4/a",  "/dns6/b.c"};
    for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++) {
        for (int with_key = 0; with_key < 2; with_key++) {
            snprintf(text, sizeof text, "%s/tcp/%d%s%s", hosts[i], (int)(i * 9000),
                     with_key ? "/p2p/" : "", with_key ? s_id : "");
            cl_addr_t a, b;
            CL_CHECK(cl_addr_parse(text, &a, err, sizeof err) == 0);
            CL_CHECK(cl_addr_format(&a, out, sizeof out) == 0);
            CL_CHECK_STREQ(out, text);
            CL_CHECK(cl_addr_parse(out, &b, err, sizeof err) == 0);
            CL_CHECK(a.family == b.family && strcmp(a.host, b.host) == 0 && a.port == b.port &&
                     a.has_key == b.has_key && memcmp(a.key, b.key, 32) == 0 &&
                     a.dns_version == b.dns_version);
        }
    }
    /* Formatting into a buffer that is too small fails cleanly. */
    cl_addr_t a;
    snprintf(text, sizeof text, "/ip4/127.0.0.1/tcp/1/p2p/%s", s_id);
    CL_CHECK(cl_addr_parse(text, &a, err, sizeof err) == 0);
    CL_CHECK(cl_addr_format(&a, out, strlen(text)) == -1);
    CL_CHECK(out[0] == '\0');
    CL_CHECK(cl_addr_format(&a, out, strlen(text) + 1) == 0);
    /* An invalid family or an unterminated host is refused. */
    cl_addr_t bad = a;
    bad.family = (cl_addr_family_t)99;
    CL_CHECK(cl_addr_format(&bad, out, sizeof out) == -1);
    CL_CHECK(cl_addr_endpoint(&bad, out, sizeof out) == -1);
    bad = a;
    memset(bad.host, 'x', sizeof bad.host);
    CL_CHECK(cl_addr_format(&bad, out, sizeof out) == -1);
    CL_CHECK(cl_addr_endpoint(&bad, out, sizeof out) == -1);
}

static void test_endpoint(void)
{
    char out[300], err[256];
    cl_addr_t a;
    CL_CHECK(cl_addr_parse("/ip4/127.0.0.1/tcp/31337", &a, err, sizeof err) == 0);
    CL_CHECK(cl_addr_endpoint(&a, out, sizeof out) == 0);
    CL_CHECK_STREQ(out, "tcp://127.0.0.1:31337");
    CL_CHECK(cl_addr_parse("/ip4/0.0.0.0/tcp/0", &a, err, sizeof err) == 0);
    CL_CHECK(cl_addr_endpoint(&a, out, sizeof out) == 0);
    CL_CHECK_STREQ(out, "tcp://0.0.0.0:*");
    CL_CHECK(cl_addr_parse("/ip6/::1/tcp/9", &a, err, sizeof err) == 0);
    CL_CHECK(cl_addr_endpoint(&a, out, sizeof out) == 0);
    CL_CHECK_STREQ(out, "tcp://[::1]:9");
    CL_CHECK(cl_addr_parse("/dns/host.example/tcp/80", &a, err, sizeof err) == 0);
    CL_CHECK(cl_addr_endpoint(&a, out, sizeof out) == 0);
    CL_CHECK_STREQ(out, "tcp://host.example:80");
    CL_CHECK(cl_addr_endpoint(&a, out, 10) == -1);
    CL_CHECK(cl_addr_endpoint(NULL, out, sizeof out) == -1);
}

static void test_list(void)
{
    char text[4 * CL_ADDR_TEXT_MAX], err[512];
    cl_addr_t *list = NULL;
    size_t n = 99;

    CL_CHECK(cl_addr_parse_list("", true, &list, &n, err, sizeof err) == 0);
    CL_CHECK(n == 0 && list == NULL);
    CL_CHECK(cl_addr_parse_list(" , ,\t", true, &list, &n, err, sizeof err) == 0);
    CL_CHECK(n == 0 && list == NULL);

    snprintf(text, sizeof text,
             " /ip4/10.0.0.1/tcp/1/p2p/%s,/ip6/::1/tcp/2/p2p/%s ,, /dns/a.b/tcp/3/p2p/%s\n", s_id,
             s_zero_id, s_id);
    CL_CHECK(cl_addr_parse_list(text, true, &list, &n, err, sizeof err) == 0);
    CL_CHECK(n == 3);
    if (n == 3) {
        CL_CHECK(list[0].port == 1 && list[1].port == 2 && list[2].port == 3);
        CL_CHECK(list[1].family == CL_ADDR_IP6 && list[2].family == CL_ADDR_DNS);
    }
    free(list);

    /* Without require_key, keys and port 0 are optional. */
    CL_CHECK(cl_addr_parse_list("/ip4/1.2.3.4/tcp/0 /ip4/1.2.3.5/tcp/7", false, &list, &n, err,
                                sizeof err) == 0);
    CL_CHECK(n == 2);
    free(list);

    list = (cl_addr_t *)&n; /* must not be freed or changed on error */
    snprintf(text, sizeof text, "/ip4/10.0.0.1/tcp/1/p2p/%s /ip4/10.0.0.2/tcp/2", s_id);
    CL_CHECK(cl_addr_parse_list(text, true, &list, &n, err, sizeof err) == -1);
    CL_CHECK_CONTAINS(err, "address 2");
    CL_CHECK_CONTAINS(err, "no /p2p/");
    snprintf(text, sizeof text, "/ip4/10.0.0.1/tcp/0/p2p/%s", s_id);
    CL_CHECK(cl_addr_parse_list(text, true, &list, &n, err, sizeof err) == -1);
    CL_CHECK_CONTAINS(err, "port 0");
    snprintf(text, sizeof text, "/ip4/10.0.0.1/tcp/1/p2p/%s,/ip4/10.0.0.300/tcp/1/p2p/%s", s_id,
             s_id);
    CL_CHECK(cl_addr_parse_list(text, true, &list, &n, err, sizeof err) == -1);
    CL_CHECK_CONTAINS(err, "address 2");
    CL_CHECK_CONTAINS(err, "10.0.0.300");
    CL_CHECK(cl_addr_parse_list("/ip4/1.2.3.4/tcp/1;/ip4/1.2.3.4/tcp/2", false, &list, &n, err,
                                sizeof err) == -1);
    CL_CHECK(list == (cl_addr_t *)&n);

    /* Too many entries. */
    size_t big_len = (CL_ADDR_LIST_MAX + 1) * 20 + 1;
    char *big = malloc(big_len);
    CL_CHECK(big != NULL);
    if (big != NULL) {
        big[0] = '\0';
        for (int i = 0; i <= CL_ADDR_LIST_MAX; i++)
            strcat(big, "/ip4/1.2.3.4/tcp/5 ");
        CL_CHECK(cl_addr_parse_list(big, false, &list, &n, err, sizeof err) == -1);
        CL_CHECK_CONTAINS(err, "at most");
        free(big);
    }
    CL_CHECK(cl_addr_parse_list(NULL, false, &list, &n, err, sizeof err) == -1);
}

int main(void)
{
    for (int i = 0; i < 32; i++)
        s_key[i] = (uint8_t)(i * 37 + 11);
    CL_CHECK(cl_base58_encode(s_key, 32, s_id, sizeof s_id) == 0);
    uint8_t zero[32] = {0};
    CL_CHECK(cl_base58_encode(zero, 32, s_zero_id, sizeof s_zero_id) == 0);
    CL_CHECK(strlen(s_zero_id) == 32 && strspn(s_zero_id, "1") == 32);
    test_good();
    test_bad();
    test_round_trip();
    test_endpoint();
    test_list();
    return cl_selftest_end("cl_addr_test");
}
