#include "http/router.h"

#include <gtest/gtest.h>

using namespace specd::http;

TEST(Router, MatchesExactPathsPrefixesAndHeadAsGet) {
    Router router;
    router.get("/api/tags", [](Request &, Response & res) { res.status = 201; });
    router.get("/api/blobs/*", [](Request &, Response &) {});
    router.post("/api/blobs/*", [](Request &, Response &) {}, BodyMode::streamed);

    Request req;
    req.method = "GET";
    req.path   = "/api/tags";
    ASSERT_NE(router.match(req), nullptr);
    req.method = "HEAD";
    ASSERT_NE(router.match(req), nullptr);
    req.method = "POST";
    EXPECT_EQ(router.match(req), nullptr); // no POST route there: a 404, as before

    req.path             = "/api/blobs/sha256:abc";
    const Route * upload = router.match(req);
    ASSERT_NE(upload, nullptr);
    EXPECT_EQ(upload->body, BodyMode::streamed);
    EXPECT_EQ(req.params, std::vector<std::string>{"sha256:abc"});
    req.path = "/api/blobs/";
    EXPECT_EQ(router.match(req), nullptr); // the prefix alone is not a match
}

TEST(Router, ExceptionsBecomeAnswersUnlessTheAnswerStreams) {
    Router router;
    router.set_exception_mapper([](const Request &, const std::exception & e, Response & res) {
        res.status = 418;
        res.body   = e.what();
    });
    router.get("/throws", [](Request &, Response & res) {
        res.headers.set("X-Partial", "1");
        throw std::runtime_error("boom");
    });
    Request req;
    req.method = "GET";
    req.path   = "/throws";
    Response res;
    router.run(*router.match(req), req, res);
    EXPECT_EQ(res.status, 418);
    EXPECT_EQ(res.body, "boom");
    EXPECT_FALSE(res.headers.has("X-Partial")); // a fresh answer, not the half-made one
}
