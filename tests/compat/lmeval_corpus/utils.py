"""Hooks of the differential corpus, as lm-eval task folders write them:
they take and return what lm-eval passes (a datasets.Dataset to
process_docs, the filtered answers to process_results)."""


def process_docs(dataset):
    return dataset.map(lambda doc: {"prompt": f"[{doc['topic']}] {doc['question']}\nHint: {doc['hint']}\nAnswer:"})


def process_results(doc, results):
    reply = results[0]
    hit = float(reply.strip().endswith(doc["answer"]))
    return {"hit": hit, "reply_chars": len(reply), "hits_total": hit}


def total(values):
    return float(sum(values))


def fewshot_samples():
    return [{"question": "What is 1 plus 2?", "answer": "3", "hint": "3", "topic": "add", "answers": ["3"]},
            {"question": "What is 8 minus 8?", "answer": "0", "hint": "#### 0", "topic": "sub", "answers": ["0"]},
            {"question": "Name the capital of Egypt.", "answer": "Cairo", "hint": "Cairo", "topic": "geo",
             "answers": ["Cairo"]}]


def last_word_filter(resps, docs):
    return [[r.strip().split(" ")[-1] if r.strip() else r for r in resp] for resp in resps]


def mc_process_results(doc, results):
    lls = [ll for ll, _ in results]
    best = max(range(len(lls)), key=lambda i: (lls[i], -i))
    return {"best_is_gold": float(best == doc["label"]), "gold_loglik": lls[doc["label"]]}
