"""The admin's names: "API keys" (not "Api keys") and "audit entries" (not "audit entrys").
Options only: nothing changes in the database."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0004_usage_record_indexes"),
    ]

    operations = [
        migrations.AlterModelOptions(name="apikey", options={"verbose_name": "API key"}),
        migrations.AlterModelOptions(name="auditentry",
                                     options={"verbose_name_plural": "audit entries"}),
    ]
